package runtime

import (
	"bytes"
	"context"
	"errors"
	goruntime "runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A small group submitted to an idle runtime from outside and waited for
// is run by the waiter as the lent workers: no worker thread wakes, every
// task runs once, and every lend is counted. With one P the late wake's
// goroutine does not run before the waiter blocks, and then finds the
// group done and wakes nobody, unless the Go runtime preempts the waiter
// first (a garbage collection starting, or a 10 ms time slice that a
// loaded machine can make it reach): a tenth of the rounds may so wake a
// worker.
func TestWaitRunsIdleGroupOnLentWorkers(t *testing.T) {
	rt := newTestRuntime(t, Config{})
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
	const rounds, size = 100, 4
	runs := make([]atomic.Int32, rounds*size)
	var workersOK atomic.Bool
	workersOK.Store(true)
	waitAllParked(t, rt)
	before := rt.Stats().Total
	for round := range rounds {
		g := rt.Group(context.Background())
		for i := range size {
			g.Go(func(c *Ctx) error {
				runs[round*size+i].Add(1)
				if c.Worker() < 0 || c.Worker() >= rt.Workers() || c.CPU() != rt.workers[c.Worker()].cpu {
					workersOK.Store(false)
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	waitAllParked(t, rt)
	after := rt.Stats().Total
	requireRanOnce(t, runs)
	if !workersOK.Load() {
		t.Error("a task run by the waiter saw a Ctx that is not a worker's")
	}
	if n := after.Wakeups - before.Wakeups; n > rounds/10 {
		t.Errorf("%d worker wake-ups for %d idle groups waited from outside, want none (at most %d)", n, rounds, rounds/10)
	}
	if n := after.Lent - before.Lent; n < rounds*9/10 {
		t.Errorf("%d lends for %d groups, want one each at least (at least %d)", n, rounds, rounds*9/10)
	}
	if n := after.TasksRun - before.TasksRun; n != rounds*size {
		t.Errorf("%d tasks counted run, want %d", n, rounds*size)
	}
}

// A task that the waiter runs as a lent worker can do what any task does:
// here it spawns children and waits for them, and waits (helping) for an
// outside group whose task is blocked on another worker, so the waiter
// parks as the lent worker and is woken when that task ends.
func TestLentWorkerHelpsAndParks(t *testing.T) {
	rt := virtualRuntime(t, "8em64t-2s2ca2c")
	var onTo atomic.Int64 // the worker that the next placement picks
	placeOn(rt, func(uint64) int { return int(onTo.Load()) })
	ctx := context.Background()

	onTo.Store(1)
	release, started := make(chan struct{}), make(chan struct{})
	var blockedOn atomic.Int64
	blocked := rt.Group(ctx)
	blocked.Go(func(c *Ctx) error { blockedOn.Store(int64(c.Worker())); close(started); <-release; return nil })
	<-started // not waited for: a worker woken by the late wake runs it
	lentID := (int(blockedOn.Load()) + 1) % rt.Workers()

	deadline := time.Now().Add(lostWakeupBound)
	for rt.sched.idle() != int32(rt.Workers()-1) || rt.sched.spinning() != 0 { // all but the blocked one
		if time.Now().After(deadline) {
			t.Fatalf("workers did not park: %s", idleState(rt))
		}
		time.Sleep(20 * time.Microsecond)
	}
	// With one P the late wake's goroutine does not run before the
	// waiter parks, so the target worker is still parked when Wait looks.
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
	before := rt.Stats().Workers[lentID]
	onTo.Store(int64(lentID))
	var children atomic.Int32
	g := rt.Group(ctx)
	g.Go(func(c *Ctx) error {
		inner := c.Group()
		for range 8 {
			c.Go(inner, func(*Ctx) error { children.Add(1); return nil })
		}
		if err := c.Wait(inner); err != nil {
			return err
		}
		time.AfterFunc(5*time.Millisecond, func() { close(release) })
		return c.Wait(blocked)
	})
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := blocked.Wait(); err != nil {
		t.Fatal(err)
	}
	after := rt.Stats().Workers[lentID]
	if children.Load() != 8 {
		t.Errorf("%d of 8 children ran", children.Load())
	}
	if after.Lent == before.Lent {
		t.Errorf("worker %d was not lent to the waiter: %+v", lentID, after)
	}
	if after.Parks == before.Parks {
		t.Errorf("the waiter's helping wait as worker %d never parked: parks %d, lent %d → %d",
			lentID, after.Parks, before.Lent, after.Lent)
	}
}

// Close while a waiter runs a task as a lent worker waits for the task,
// and the worker's thread then exits (TestMain's goleak check would see
// it stay); in Cancel mode the group's tasks not yet started are
// canceled.
func TestCloseWhileLent(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1)) // the waiter runs the tasks
	for _, mode := range []CloseMode{Drain, Cancel} {
		rt, err := New(Config{CloseMode: mode, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		waitAllParked(t, rt)
		var ran atomic.Int32
		submitted := make(chan struct{})
		g := rt.Group(context.Background())
		g.Go(func(*Ctx) error {
			ran.Add(1)
			<-submitted // Close refuses later injections
			go rt.Close()
			for !rt.isClosing() {
				time.Sleep(10 * time.Microsecond)
			}
			time.Sleep(time.Millisecond)
			return nil
		})
		g.Go(func(*Ctx) error { ran.Add(1); return nil })
		close(submitted)
		err = g.Wait()
		rt.Close() // returns once the worker has exited
		switch mode {
		case Drain:
			if err != nil || ran.Load() != 2 {
				t.Errorf("Drain: Wait = %v with %d of 2 tasks run", err, ran.Load())
			}
		case Cancel:
			if ran.Load() == 1 && !errors.Is(err, context.Canceled) && !errors.Is(err, ErrClosed) {
				t.Errorf("Cancel: Wait = %v with the second task canceled", err)
			}
		}
		if c := countsOf(g); c.total() != 2 {
			t.Errorf("mode %v: %d outcomes for 2 tasks: %+v", mode, c.total(), c)
		}
	}
}

// A waiter that ran a named group's tasks, whose labels it wore meanwhile,
// ends with the labels of the context it made the group with.
func TestLentTaskLabelsRestored(t *testing.T) {
	rt := newTestRuntime(t, Config{})
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1)) // the waiter runs the tasks
	waitAllParked(t, rt)
	pprof.Do(context.Background(), pprof.Labels("request", "r7"), func(ctx context.Context) {
		g := rt.Group(ctx).SetName("handler")
		var inTask string
		g.Go(func(*Ctx) error { inTask = ownLabels(t); return nil })
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		if rt.Stats().Total.Lent == 0 {
			t.Skip("the waiter ran no task")
		}
		if !strings.Contains(inTask, `"group":"handler"`) {
			t.Errorf("labels in the task run by the waiter: %s, want group=handler", inTask)
		}
		if got := ownLabels(t); !strings.Contains(got, `"request":"r7"`) || strings.Contains(got, "handler") {
			t.Errorf("the waiter's labels after Wait: %s, want request=r7 only", got)
		}
	})
}

// ownLabels returns the labels of the calling goroutine as the goroutine
// profile prints them ("" for none): the record whose stack holds
// ownLabels itself.
func ownLabels(t *testing.T) string {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		t.Fatal(err)
	}
	for _, rec := range strings.Split(buf.String(), "\n\n") {
		if !strings.Contains(rec, "runtime.ownLabels") {
			continue
		}
		for _, line := range strings.Split(rec, "\n") {
			if l, ok := strings.CutPrefix(line, "# labels: "); ok {
				return l
			}
		}
		return ""
	}
	t.Fatal("the calling goroutine is not in the goroutine profile")
	return ""
}
