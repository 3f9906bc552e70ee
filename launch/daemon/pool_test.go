package daemon

import (
	"testing"
)

func newTestPool(slots int, budget int64) *pool {
	return &pool{slots: slots, budget: budget, running: map[int64]*job{}, perCPU: make([]int, 4), nodeOf: func(int) int { return 0 }}
}

var nextTestID int64

func testJob(build string, need int64) *job {
	nextTestID++
	return &job{id: nextTestID, build: build, need: need, cpu: -1, granted: make(chan struct{})}
}

func admitted(j *job) bool {
	select {
	case <-j.granted:
		return true
	default:
		return false
	}
}

// TestPoolRoundRobin: a build of 1 job submitted after a build of 10 is
// admitted at the next free slot, not after the 10.
func TestPoolRoundRobin(t *testing.T) {
	p := newTestPool(1, 100)
	var big []*job
	for range 10 {
		j := testJob("big", 1)
		big = append(big, j)
		p.submit(j)
	}
	small := testJob("small", 1)
	p.submit(small)
	if !admitted(big[0]) || admitted(small) {
		t.Fatal("first job of big should run, small wait")
	}
	p.remove(big[0])
	if !admitted(small) {
		t.Fatal("small not admitted at the first free slot")
	}
	p.remove(small)
	if !admitted(big[1]) {
		t.Fatal("big's second job not admitted")
	}
}

// TestPoolMemory: jobs are admitted while their needs fit the budget; a
// job above the whole budget runs alone; the head that does not fit is
// not passed.
func TestPoolMemory(t *testing.T) {
	p := newTestPool(4, 100)
	a, b, c, d := testJob("x", 60), testJob("x", 60), testJob("y", 500), testJob("y", 10)
	for _, j := range []*job{a, b, c, d} {
		p.submit(j)
	}
	if !admitted(a) || admitted(b) || admitted(c) || admitted(d) {
		t.Fatalf("want only a: %v %v %v %v", admitted(a), admitted(b), admitted(c), admitted(d))
	}
	p.remove(a)
	if !admitted(c) || c.need != 100 || admitted(b) || admitted(d) {
		t.Fatalf("want c (build y, never served) alone, clamped to the budget; need %d", c.need)
	}
	p.remove(c)
	if !admitted(b) || !admitted(d) || p.memUsed != 70 {
		t.Fatal("want b (build x, served before y) and d beside it (60+10 fit)")
	}
	p.remove(b)
	p.remove(d)
	if p.memUsed != 0 || len(p.running) != 0 || len(p.builds) != 0 {
		t.Fatalf("pool not empty: %+v", p)
	}
}

// TestPoolCancelWaiting: removing a waiting job leaves the others.
func TestPoolCancelWaiting(t *testing.T) {
	p := newTestPool(1, 100)
	a, b, c := testJob("x", 1), testJob("x", 1), testJob("z", 1)
	p.submit(a)
	p.submit(b)
	p.submit(c)
	p.remove(b)
	p.remove(b)
	p.remove(a)
	if !admitted(c) || admitted(b) {
		t.Fatal("c should run after a, b was cancelled")
	}
}

func TestParseRSS(t *testing.T) {
	s, err := parseRSSString("100\t/a b.o\n2048\t/x\n")
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := s.lookup("/a b.o"); !ok || b != 100<<10 {
		t.Errorf("lookup = %d %v", b, ok)
	}
	if _, err := parseRSSString("x\t/a\n"); err == nil {
		t.Error("no error for a bad line")
	}
}

func TestParseMeminfo(t *testing.T) {
	if v := parseMeminfo([]byte("MemTotal: 10 kB\nMemAvailable:    2048 kB\n"), "MemAvailable:"); v != 2048<<10 {
		t.Errorf("MemAvailable = %d", v)
	}
}
