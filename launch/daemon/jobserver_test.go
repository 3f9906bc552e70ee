//go:build linux

package daemon

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/jobserver"
	"github.com/numasteal/numasteal/launch"
)

// addJobserver gives p a build with a jobserver, as startJobserver does
// without a process behind it.
func addJobserver(t *testing.T, p *pool, build string) *buildQueue {
	t.Helper()
	e, err := jobserver.NewElastic()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	q := &buildQueue{id: build, js: &jsBuild{id: build, pipe: e}}
	p.builds = append(p.builds, q)
	p.admit()
	return q
}

// take has a client of q's jobserver take n tokens out of the pipe (make
// forking n jobs).
func take(t *testing.T, q *buildQueue, n int) {
	t.Helper()
	if got, err := q.js.pipe.Reclaim(n); err != nil || got != n {
		t.Fatalf("took %d tokens, %v; want %d", got, err, n)
	}
}

// refresh is the daemon's tick: the pipes' idle tokens looked at again,
// and admission run.
func refresh(p *pool) {
	p.refreshIdle()
	p.admit()
}

// TestPoolLendsSlots: a jobserver build gets the implicit slot and a
// token of 2 slots; its launchers run on them at once; with every slot
// taken by launchers one token more goes ahead, whose launcher waits for
// a slot; a second build shares the slots that free.
func TestPoolLendsSlots(t *testing.T) {
	p := newTestPool(t, 2, 1<<40)
	a := addJobserver(t, p, "a")
	if !a.js.implicit || a.js.lent != 1 || p.used() != 2 {
		t.Fatalf("after registration: implicit %v lent %d used %d; want true 1 2", a.js.implicit, a.js.lent, p.used())
	}
	take(t, a, 1)
	j1, j2 := testJob("a", 1), testJob("a", 1)
	p.submit(j1)
	p.submit(j2)
	if !admitted(j1) || !admitted(j2) {
		t.Fatal("the build's launchers on its implicit slot and token did not run at once")
	}
	refresh(p) // every token held, both slots run launchers: one ahead
	if a.js.ahead != 1 || a.js.lent != 2 || p.used() != 2 {
		t.Fatalf("ahead %d lent %d used %d; want 1 2 2", a.js.ahead, a.js.lent, p.used())
	}
	take(t, a, 1)
	j3 := testJob("a", 1)
	p.submit(j3)
	if admitted(j3) {
		t.Fatal("the launcher on the token ahead ran beyond the slots")
	}
	p.remove(j1)
	if !admitted(j3) {
		t.Fatal("the launcher ahead did not take the slot that freed")
	}
	// A second build arrives: it gets the implicit slot only when one
	// frees, and nothing ahead while it has no launcher running.
	b := addJobserver(t, p, "b")
	if b.js.implicit || b.js.lent != 0 {
		t.Fatalf("b got a slot none had free: implicit %v lent %d", b.js.implicit, b.js.lent)
	}
	// a's make gets j1's token back and lets it lie: it is taken back
	// (it stood on no slot), and a, over its share of one slot with b
	// waiting, has its tokens beyond the share counted ahead.
	if err := a.js.pipe.Lend(1); err != nil { // make writes back j1's token
		t.Fatal(err)
	}
	refresh(p)
	if a.js.reserved() != 1 || b.js.implicit {
		t.Fatalf("a reserves %d slots (want its share, 1), b implicit %v (want false: no slot is free yet)", a.js.reserved(), b.js.implicit)
	}
	// a's next launcher waits; when j2 ends, the slot goes to b.
	j4 := testJob("a", 1)
	p.submit(j4)
	if admitted(j4) {
		t.Fatal("a's launcher beyond its share ran at once")
	}
	p.remove(j2)
	if !b.js.implicit || admitted(j4) {
		t.Fatalf("the freed slot: b implicit %v, a's waiting launcher admitted %v; want b's", b.js.implicit, admitted(j4))
	}
	p.remove(j3)
	if !admitted(j4) {
		t.Fatal("a's launcher did not get the next slot")
	}
	if p.used() > p.slots {
		t.Fatalf("used %d of %d slots", p.used(), p.slots)
	}
}

// TestPoolReclaimsForMemory: while memory holds admission, idle tokens
// are taken back and none is lent.
func TestPoolReclaimsForMemory(t *testing.T) {
	p := newTestPool(t, 4, 100)
	a := addJobserver(t, p, "a")
	if a.js.lent == 0 {
		t.Fatal("no token lent with 4 slots and room")
	}
	big := testJob("other", 90)
	p.submit(big)
	waiting := testJob("other", 50) // does not fit beside big: admission holds
	p.submit(waiting)
	refresh(p)
	if admitted(waiting) {
		t.Fatal("a job that does not fit was admitted")
	}
	if n, _ := a.js.pipe.Idle(); n != 0 || a.js.lent != 0 {
		t.Fatalf("while memory holds: %d idle tokens, %d lent; want 0 0", n, a.js.lent)
	}
}

// TestJobserverServed asks a daemon of 3 slots for a jobserver over its
// socket, as numasteal exec does: the reply carries the pipe, which holds
// the 2 tokens beside the make's implicit slot; the status shows the
// build, named by this process; at shutdown every goroutine ends.
func TestJobserverServed(t *testing.T) {
	s, socket := startServer(t, Config{Slots: 3, Mem: 1 << 30})
	c, err := launch.Dial(socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send(launch.NewMsg("jobserver", "name", "make")); err != nil {
		t.Fatal(err)
	}
	m, fds, err := c.ReadRights()
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		defer unix.Close(fd)
	}
	if slots, _ := m.Int("slots"); m.Verb != "jobserver" || slots != 3 || len(fds) != 2 {
		t.Fatalf("reply %v with %d descriptors; want jobserver slots=3 and 2", m, len(fds))
	}
	if n, err := unix.IoctlGetInt(fds[0], unix.TIOCINQ); err != nil || n != 2 {
		t.Fatalf("the pipe holds %d tokens (%v); want 2", n, err)
	}
	st := s.Status()
	prefix := "make-" + strconv.Itoa(os.Getpid()) + "-"
	if len(st.Jobservers) != 1 || !strings.HasPrefix(st.Jobservers[0].Build, prefix) || st.Jobservers[0].Lent != 2 || !st.Jobservers[0].Implicit {
		t.Fatalf("status jobservers %+v; want one of build %s..., 2 lent, implicit", st.Jobservers, prefix)
	}
}
