package daemon

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/numasteal/numasteal/farm"
	"github.com/numasteal/numasteal/memory"
)

// newTestPool returns a pool of slots whose memory is budget bytes, on a
// machine that has far more (a fixture /proc/meminfo): the budget binds.
func newTestPool(t *testing.T, slots int, budget int64) *pool {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "proc"), 0o755)
	os.WriteFile(filepath.Join(root, "proc/meminfo"), []byte("MemAvailable: 1073741824 kB\n"), 0o644)
	src, err := memory.Open(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	gov := memory.NewGovernor(src, memory.Thresholds{Budget: budget, Reserve: 1}, memory.Options{Proc: filepath.Join(root, "proc")})
	return &pool{slots: slots, mem: gov, running: map[int64]*job{}, perCPU: make([]int, 4), nodeOf: func(int) int { return 0 }}
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
	p := newTestPool(t, 1, 100)
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
	p := newTestPool(t, 4, 100)
	a, b, c, d := testJob("x", 60), testJob("x", 60), testJob("y", 500), testJob("y", 10)
	for _, j := range []*job{a, b, c, d} {
		p.submit(j)
	}
	if !admitted(a) || admitted(b) || admitted(c) || admitted(d) {
		t.Fatalf("want only a: %v %v %v %v", admitted(a), admitted(b), admitted(c), admitted(d))
	}
	p.remove(a)
	if !admitted(c) || admitted(b) || admitted(d) {
		t.Fatalf("want c (build y, never served) alone, above the budget; need %d", c.need)
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
	p := newTestPool(t, 1, 100)
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

// TestPoolFarm: with the local slot taken, compiles that may go remote
// get the farm's slots, passing a link that waits for the local one; a
// job run again after its farm run failed waits at the head of its build;
// a released lease admits the next remote job, and a host fault takes the
// host out until its back-off ends, when admission is woken.
func TestPoolFarm(t *testing.T) {
	p := newTestPool(t, 1, 100)
	p.farm = farm.New([]farm.Host{{Name: "h", Port: farm.DefaultPort, Slots: 2}}, farm.Config{BackoffBase: time.Minute})
	remote := func(build string) *job { j := testJob(build, 10); j.remote = true; return j }
	first, link := remote("x"), testJob("x", 10)
	r1, r2, r3 := remote("x"), remote("y"), remote("x")
	for _, j := range []*job{first, link, r1, r2, r3} {
		p.submit(j)
	}
	if !admitted(first) || first.lease != nil {
		t.Fatal("the first job should run locally")
	}
	if admitted(link) || !admitted(r1) || !admitted(r2) || admitted(r3) {
		t.Fatalf("want r1 and r2 remote, link and r3 waiting: %v %v %v %v", admitted(link), admitted(r1), admitted(r2), admitted(r3))
	}
	if r1.lease == nil || r1.cpu != -1 || r1.need != 0 || p.memUsed != 10 || p.remote != 2 {
		t.Fatalf("remote job r1: lease %v cpu %d need %d; memUsed %d remote %d", r1.lease, r1.cpu, r1.need, p.memUsed, p.remote)
	}
	// r1's distcc failed: the host backs off, and its retry waits first.
	// r3 waits for the host to come back up, with a wake-up then.
	var wake time.Time
	p.wake = func(at time.Time) { wake = at }
	r1.outcome = farm.Outcome{HostFault: true}
	p.remove(r1)
	if admitted(r3) {
		t.Fatal("r3 got the slot of a host that is down")
	}
	if d := time.Until(wake); d < 59*time.Second || d > time.Minute {
		t.Fatalf("wake-up in %v, want at the end of the host's back-off, a minute", d)
	}
	retry := testJob("x", 10)
	retry.local = true
	p.submit(retry)
	p.remove(first)
	if !admitted(retry) || admitted(link) || retry.lease != nil {
		t.Fatal("the retry should take the local slot before the link")
	}
	p.remove(retry)
	if !admitted(link) {
		t.Fatal("the link should run next")
	}
	p.remove(link)
	if !admitted(r3) || r3.lease != nil {
		t.Fatal("r3 should run locally, the host being down")
	}
	r2.outcome = farm.Outcome{OK: true}
	p.remove(r2)
	p.remove(r3)
	st := p.farm.Stats(time.Now())[0]
	if st.Running != 0 || st.Jobs != 1 || st.Failures != 1 || !st.Down || p.remote != 0 || len(p.running) != 0 || len(p.builds) != 0 {
		t.Fatalf("after the jobs: host %+v, pool remote %d running %d builds %d", st, p.remote, len(p.running), len(p.builds))
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
