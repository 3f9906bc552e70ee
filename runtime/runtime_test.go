package runtime

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/topology/cpuset"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newTestRuntime starts a runtime on the live machine and closes it when the
// test ends.
func newTestRuntime(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	rt, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// parallelFor runs Ctx.ParallelFor in a task of rt and waits for it.
func parallelFor(rt *Runtime, ctx context.Context, lo, hi, grain int, fn func(c *Ctx, lo, hi int) error) error {
	return rt.Go(ctx, func(c *Ctx) error { return c.ParallelFor(lo, hi, grain, fn) }).Wait()
}

// groupCounts tallies the outcomes of a group's tasks.
type groupCounts struct{ Succeeded, Failed, Panicked, Canceled int64 }

// countsOf returns how many tasks of g ended in each way so far.
func countsOf(g *Group) groupCounts {
	return groupCounts{
		Succeeded: g.counts[succeeded].Load(),
		Failed:    g.counts[failed].Load(),
		Panicked:  g.counts[panicked].Load(),
		Canceled:  g.counts[canceled].Load(),
	}
}

func (c groupCounts) total() int64 { return c.Succeeded + c.Failed + c.Panicked + c.Canceled }

func fibJoin(c *Ctx, n int) int {
	if n < 2 {
		return n
	}
	var a, b int
	c.Join(
		func(c *Ctx) error { a = fibJoin(c, n-1); return nil },
		func(c *Ctx) error { b = fibJoin(c, n-2); return nil },
	)
	return a + b
}

func fibGroup(c *Ctx, n int) int {
	if n < 2 {
		return n
	}
	var a int
	g := c.Group()
	c.Go(g, func(c *Ctx) error { a = fibGroup(c, n-1); return nil })
	b := fibGroup(c, n-2)
	if err := c.Wait(g); err != nil {
		panic(err)
	}
	return a + b
}

func fibSerial(n int) int {
	if n < 2 {
		return n
	}
	return fibSerial(n-1) + fibSerial(n-2)
}

func TestFibJoinAndGroup(t *testing.T) {
	rt := newTestRuntime(t, Config{})
	for _, n := range []int{0, 1, 2, 10, 20} {
		var got1, got2 int
		g := rt.Group(context.Background())
		g.Go(func(c *Ctx) error { got1 = fibJoin(c, n); return nil })
		g.Go(func(c *Ctx) error { got2 = fibGroup(c, n); return nil })
		if err := g.Wait(); err != nil {
			t.Fatalf("fib(%d): %v", n, err)
		}
		if want := fibSerial(n); got1 != want || got2 != want {
			t.Errorf("fib(%d) = %d (Join), %d (Group), want %d", n, got1, got2, want)
		}
	}
}

func TestWorkersAndSubsets(t *testing.T) {
	rt := newTestRuntime(t, Config{})
	if got, want := rt.Workers(), rt.Topology().Usable.Len(); got != want {
		t.Errorf("Workers() = %d, want one per usable CPU (%d)", got, want)
	}
	one := newTestRuntime(t, Config{Workers: 1})
	if one.Workers() != 1 {
		t.Errorf("Workers: 1 gave %d workers", one.Workers())
	}
	// Every task of a one-worker runtime runs on that worker's CPU.
	cpu := one.workers[0].cpu
	var wrong atomic.Int32
	err := parallelFor(one, context.Background(), 0, 1000, 10, func(c *Ctx, lo, hi int) error {
		if c.CPU() != cpu {
			wrong.Add(1)
		}
		return nil
	})
	if err != nil || wrong.Load() != 0 {
		t.Errorf("ParallelFor on one worker: err %v, %d chunks elsewhere", err, wrong.Load())
	}
	if _, err := New(Config{Nodes: cpuset.Of(99)}); err == nil {
		t.Errorf("New with only node 99 succeeded, want an error")
	}
}

// A group made by Ctx.Group is used through its task's Ctx: Group's own
// injecting and blocking methods panic on it, naming the Ctx method to
// use, and the group still works afterwards.
func TestTaskGroupRefusesGroupMethods(t *testing.T) {
	rt := newTestRuntime(t, Config{Workers: 1})
	err := rt.Go(context.Background(), func(c *Ctx) error {
		g := c.Group()
		for _, m := range []struct {
			name string
			call func()
		}{
			{"Go", func() { g.Go(benchNop) }},
			{"Spawn", func() { g.Spawn(&Task{}) }},
			{"Wait", func() { g.Wait() }},
		} {
			want := "runtime: Group." + m.name + ": a group made by Ctx.Group; its task uses Ctx." + m.name
			if got := panicValue(m.call); got != want {
				return fmt.Errorf("Group.%s on a task's group: panic %v, want %q", m.name, got, want)
			}
		}
		ran := false
		c.Go(g, func(*Ctx) error { ran = true; return nil })
		if err := c.Wait(g); err != nil || !ran {
			return fmt.Errorf("after the panics: Wait = %v, ran = %v", err, ran)
		}
		return nil
	}).Wait()
	if err != nil {
		t.Fatal(err)
	}
}

// panicValue calls f and returns what it panicked with, or nil.
func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

func TestPanicIsCapturedAndWorkerSurvives(t *testing.T) {
	rt := newTestRuntime(t, Config{Workers: 1})
	g := rt.Group(context.Background())
	g.Go(func(c *Ctx) error { panic("boom") })
	err := g.Wait()
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("Wait = %v, want a *PanicError", err)
	}
	if pe.Value != "boom" || !strings.Contains(string(pe.Stack), "TestPanicIsCapturedAndWorkerSurvives") {
		t.Errorf("PanicError value %v, stack lacks the panicking function:\n%s", pe.Value, pe.Stack)
	}
	if c := countsOf(g); c.Panicked != 1 || c.total() != 1 {
		t.Errorf("counts %+v, want one panicked", c)
	}
	// The worker survived: it still runs tasks, including a panic inside
	// a Join, which ends its task the same way, and then the next task.
	g2 := rt.Group(context.Background())
	var ran atomic.Bool
	g2.Go(func(c *Ctx) error {
		return c.Join(func(*Ctx) error { return nil }, func(*Ctx) error { panic(errors.New("inner")) })
	})
	err = g2.Wait()
	if !errors.As(err, &pe) || pe.Unwrap() == nil || pe.Unwrap().Error() != "inner" {
		t.Fatalf("after a panic: Wait = %v, want the inner panic", err)
	}
	g3 := rt.Group(context.Background())
	g3.Go(func(*Ctx) error { ran.Store(true); return nil })
	if err := g3.Wait(); err != nil || !ran.Load() {
		t.Fatalf("after two panics: Wait = %v, ran = %v", err, ran.Load())
	}
}

func TestFirstErrorCancelsGroup(t *testing.T) {
	rt := newTestRuntime(t, Config{Workers: 1})
	boom := errors.New("boom")
	g := rt.Group(context.Background())
	started := make(chan struct{})
	release := make(chan struct{})
	// Task 1 blocks the only worker until task 2 is queued behind it.
	g.Go(func(c *Ctx) error {
		close(started)
		<-release
		return boom
	})
	<-started
	const queued = 50
	var ran atomic.Int32
	for range queued {
		g.Go(func(c *Ctx) error { ran.Add(1); return nil })
	}
	ctx := g.Context()
	close(release)
	if err := g.Wait(); !errors.Is(err, boom) {
		t.Fatalf("Wait = %v, want boom", err)
	}
	if ctx.Err() == nil || !errors.Is(context.Cause(ctx), boom) {
		t.Errorf("group context not canceled with cause boom: %v", context.Cause(ctx))
	}
	c := countsOf(g)
	if c.Failed != 1 || c.Canceled != queued || ran.Load() != 0 || c.total() != queued+1 {
		t.Errorf("counts %+v, ran %d: want 1 failed and %d canceled, none run", c, ran.Load(), queued)
	}
}

func TestParentCancelDropsQueuedTasks(t *testing.T) {
	rt := newTestRuntime(t, Config{Workers: 1})
	ctx, cancel := context.WithCancel(context.Background())
	g := rt.Group(ctx)
	started, release := make(chan struct{}), make(chan struct{})
	g.Go(func(c *Ctx) error { close(started); <-release; return nil })
	<-started
	for range 10 {
		g.Go(func(c *Ctx) error { return errors.New("must not run") })
	}
	cancel()
	close(release)
	if err := g.Wait(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	if c := countsOf(g); c.Succeeded != 1 || c.Canceled != 10 {
		t.Errorf("counts %+v, want 1 succeeded, 10 canceled", c)
	}
}

func TestReusableTask(t *testing.T) {
	rt := newTestRuntime(t, Config{})
	var n atomic.Int64
	tasks := make([]Task, 8)
	for i := range tasks {
		tasks[i].Fn = func(c *Ctx) error { n.Add(1); return nil }
	}
	for round := range 50 {
		g := rt.Group(context.Background())
		for i := range tasks {
			g.Spawn(&tasks[i])
		}
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		for i := range tasks {
			if !tasks[i].Done() {
				t.Fatalf("round %d: task %d not Done after Wait", round, i)
			}
		}
	}
	if n.Load() != 50*8 {
		t.Errorf("ran %d tasks, want %d", n.Load(), 50*8)
	}
}

func TestGoNextRunsContinuationsAndOlderWork(t *testing.T) {
	rt := newTestRuntime(t, Config{Workers: 1})
	var order []string
	var mu sync.Mutex
	rec := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	g := rt.Group(context.Background())
	g.Go(func(c *Ctx) error {
		inner := c.Group()
		c.Go(inner, func(*Ctx) error { rec("old"); return nil })
		var chain func(i int) Func
		chain = func(i int) Func {
			return func(c *Ctx) error {
				rec(fmt.Sprint("next", i))
				if i < 6 {
					c.GoNext(inner, chain(i+1))
				}
				return nil
			}
		}
		c.GoNext(inner, chain(0))
		return c.Wait(inner)
	})
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	// The LIFO slot runs the chain, but after maxLIFORuns in a row the
	// older task gets its turn before the chain finishes.
	oldAt := -1
	for i, s := range order {
		if s == "old" {
			oldAt = i
		}
	}
	if len(order) != 8 || oldAt < 0 || oldAt > maxLIFORuns+1 {
		t.Errorf("order %v: the older task ran at %d, want within the first %d", order, oldAt, maxLIFORuns+2)
	}
}

// TestEveryTaskOneOutcomeUnderLoad submits nested work from many goroutines
// with errors, panics and cancellations mixed in, closes the runtime while
// work is still arriving, and checks that each submitted task reported
// exactly one outcome.
func TestEveryTaskOneOutcomeUnderLoad(t *testing.T) {
	for _, mode := range []CloseMode{Drain, Cancel} {
		t.Run(fmt.Sprint("mode", mode), func(t *testing.T) {
			rt, err := New(Config{CloseMode: mode, foldEvery: 7})
			if err != nil {
				t.Fatal(err)
			}
			var submitted, reported, ran atomic.Int64
			var wg sync.WaitGroup
			groups := make(chan *Group, 1024)
			for s := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 200; i++ {
						ctx, cancel := context.WithCancel(context.Background())
						g := rt.Group(ctx)
						for j := range 5 {
							submitted.Add(1)
							g.Go(func(c *Ctx) error {
								ran.Add(1)
								inner := c.Group()
								for k := range 3 {
									submitted.Add(1)
									c.Go(inner, func(c *Ctx) error {
										ran.Add(1)
										switch (s + i + j + k) % 17 {
										case 3:
											return errors.New("failed")
										case 5:
											panic("panicked")
										}
										return nil
									})
								}
								return c.Wait(inner)
							})
						}
						if i%7 == 0 {
							cancel()
						}
						groups <- g
						defer cancel()
					}
				}()
			}
			go func() { wg.Wait(); close(groups) }()
			closed := make(chan struct{})
			n := 0
			for g := range groups {
				if n++; n == 600 {
					go func() { rt.Close(); close(closed) }()
				}
				g.Wait()
				reported.Add(countsOf(g).total())
			}
			<-closed
			// Inner groups report to their own counts; count their
			// tasks through the runtime's stats instead: every task that
			// ran was run once.
			s := rt.Stats()
			if got := int64(s.Total.TasksRun); got != ran.Load() {
				t.Errorf("stats TasksRun = %d, tasks that ran = %d", got, ran.Load())
			}
			if reported.Load() != 8*200*5 {
				t.Errorf("outer groups reported %d outcomes, want %d", reported.Load(), 8*200*5)
			}
		})
	}
}

func TestIdleRuntimeUsesNoCPU(t *testing.T) {
	rt := newTestRuntime(t, Config{})
	// Give it work, then let it go idle.
	if err := parallelFor(rt, context.Background(), 0, 1<<16, 64, func(*Ctx, int, int) error { return nil }); err != nil {
		t.Fatal(err)
	}
	waitAllParked(t, rt)
	before := cpuTime(t)
	const idle = 500 * time.Millisecond
	time.Sleep(idle)
	used := cpuTime(t) - before
	// "About 0%": allow 4% of one CPU for the test process's own noise
	// (the race detector, the Go runtime's sysmon and GC).
	if used > idle/25 {
		t.Errorf("idle runtime used %v of CPU in %v (%d workers)", used, idle, rt.Workers())
	}
	if s := rt.Stats(); s.Total.Parks == 0 {
		t.Errorf("no worker parked: %+v", s.Total)
	}
}

func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestCloseIsIdempotentAndRefusesLateWork(t *testing.T) {
	rt, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	g := rt.Group(context.Background())
	g.Go(func(*Ctx) error { return nil })
	if err := g.Wait(); !errors.Is(err, ErrClosed) {
		t.Errorf("Go after Close: Wait = %v, want ErrClosed", err)
	}
	if c := countsOf(g); c.Canceled != 1 {
		t.Errorf("counts %+v, want 1 canceled", c)
	}
}

// TestStatsFoldedAndExactAfterClose checks the counts of a fork-join run
// after Close folded every worker. Without periodic balancing, a Join job
// runs as a task (rather than inline) only when a steal moved it: the one a
// steal returns runs at once, and the rest of a batch steal (Victim.Max > 1)
// waits in the thief's deque, where it may be stolen again. So with
// single-task steals TasksRun is exactly 1 + Steals = 1 + StolenFrom, and
// with batches Steals <= TasksRun-1 <= StolenFrom.
func TestStatsFoldedAndExactAfterClose(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   balance.HierarchicalConfig
		exact bool
	}{
		{"single", balance.HierarchicalConfig{StealCap: 1}, true},
		{"batch", balance.HierarchicalConfig{StealLocal: 8}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := New(Config{foldEvery: 1000, BalanceTick: -1, Policy: balance.NewHierarchical(tc.cfg)})
			if err != nil {
				t.Fatal(err)
			}
			const n = 20
			var got int
			g := rt.Group(context.Background())
			g.Go(func(c *Ctx) error { got = fibJoin(c, n); return nil })
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			mid := rt.Stats() // may lag; must be race-free
			rt.Close()
			s := rt.Stats()
			// fibJoin forks once per call with n >= 2, and only its
			// promoted forks are pushed; the outer task is injected.
			calls := 0
			var count func(int)
			count = func(k int) {
				if k >= 2 {
					calls++
					count(k - 1)
					count(k - 2)
				}
			}
			count(n)
			if s.Total.Forks != uint64(calls) || s.Total.Injected != 1 {
				t.Errorf("Forks %d, Injected %d; want %d and 1", s.Total.Forks, s.Total.Injected, calls)
			}
			if s.Total.Spawned != s.Total.Promoted || s.Total.Promoted > s.Total.Forks {
				t.Errorf("Spawned %d, Promoted %d, Forks %d: want Spawned = Promoted <= Forks", s.Total.Spawned, s.Total.Promoted, s.Total.Forks)
			}
			steals, run, taken := s.Total.stealsTotal(), s.Total.TasksRun, s.Total.StolenFrom
			if tc.exact && (run != 1+steals || taken != steals) {
				t.Errorf("TasksRun %d, Steals %d, StolenFrom %d: want TasksRun = 1 + Steals = 1 + StolenFrom", run, steals, taken)
			}
			if !tc.exact && (run < 1+steals || run > 1+taken) {
				t.Errorf("TasksRun %d, Steals %d, StolenFrom %d: want 1 + Steals <= TasksRun <= 1 + StolenFrom", run, steals, taken)
			}
			t.Logf("TasksRun %d, Steals %d, StolenFrom %d", run, steals, taken)
			if mid.Total.Spawned > s.Total.Spawned {
				t.Errorf("snapshot ahead of the final count")
			}
			if want := fibSerial(n); got != want {
				t.Errorf("fib(%d) = %d, want %d", n, got, want)
			}
		})
	}
}

// TestGroupContextReleased checks that a group's context under a
// cancelable parent is let go once Wait returns: a context derived from
// the parent stays registered with it until one of them is canceled, so
// groups that asked for Context would otherwise pile up in the parent for
// as long as it lives. Live heap objects must not grow with the number of
// groups, from outside (Group.Wait) and from a task (Ctx.Group, Ctx.Wait).
func TestGroupContextReleased(t *testing.T) {
	rt := newTestRuntime(t, Config{})
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	outside := func(n int) {
		for range n {
			g := rt.Group(parent)
			g.Go(func(c *Ctx) error { _ = c.Context(); return nil })
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			if g.Context().Err() != nil {
				t.Fatal("a group's context after a finished Wait was canceled, want a new one")
			}
			g.Go(func(*Ctx) error { return nil })
			g.Wait()
		}
	}
	inside := func(n int) {
		g := rt.Group(parent)
		g.Go(func(c *Ctx) error {
			for range n {
				sub := c.Group()
				ctx := sub.Context()
				c.Go(sub, func(*Ctx) error { return nil })
				if err := c.Wait(sub); err != nil {
					return err
				}
				if ctx.Err() == nil {
					return errors.New("the context of a waited group is not canceled")
				}
			}
			return nil
		})
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		run  func(int)
	}{{"outside", outside}, {"inside", inside}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(1000) // warm up pools and free lists
			before := liveObjects()
			const n = 20000
			tc.run(n)
			// A kept context holds at least one object per group (its
			// entry in the parent, the context, the group): n or more.
			// The allowance is for what the race detector, timers and
			// free lists hold at the moment of the count (a few
			// thousand seen under -race).
			if grew := liveObjects() - before; grew > n/2 {
				t.Errorf("%d live heap objects more after %d groups with a context: the contexts are kept", grew, n)
			}
		})
	}
}

// liveObjects returns the number of live heap objects after a full GC.
func liveObjects() int64 {
	var ms goruntime.MemStats
	goruntime.GC()
	goruntime.GC() // the second pass runs the cleanups the first queued
	goruntime.ReadMemStats(&ms)
	return int64(ms.HeapObjects)
}
