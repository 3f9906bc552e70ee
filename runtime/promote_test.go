package runtime

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
)

// TestPromotedForksRunOnceWithPanics runs a Jobs recursion and a closure
// Join recursion whose leaves sometimes panic or fail, on 16 virtual
// workers (so forks are promoted and stolen) and on one worker (never
// promoted): every leaf runs exactly once, every panic ends the task as a
// *PanicError, and each worker's remembered-fork list is empty again
// afterwards.
func TestPromotedForksRunOnceWithPanics(t *testing.T) {
	errLeaf := errors.New("leaf failed")
	for _, rt := range []*Runtime{virtualRuntime(t, "16amd64-8n2c"), newTestRuntime(t, Config{Workers: 1})} {
		const leaves = 1 << 12
		runs := make([]atomic.Int32, leaves)
		leaf := func(i int) error {
			runs[i].Add(1)
			burn(50)
			switch {
			case i%397 == 0:
				panic("leaf panicked")
			case i%211 == 0:
				return errLeaf
			}
			return nil
		}
		var jobs *Jobs[[2]int, int]
		jobs = NewJobs(rt, func(c *Ctx, r [2]int) (int, error) {
			if r[1]-r[0] == 1 {
				return 1, leaf(r[0])
			}
			mid := (r[0] + r[1]) / 2
			a, b, err := jobs.Join(c, [2]int{r[0], mid}, [2]int{mid, r[1]})
			return a + b, err
		})
		var join func(c *Ctx, lo, hi int) error
		join = func(c *Ctx, lo, hi int) error {
			if hi-lo == 1 {
				return leaf(lo)
			}
			mid := (lo + hi) / 2
			return c.Join(func(c *Ctx) error { return join(c, lo, mid) }, func(c *Ctx) error { return join(c, mid, hi) })
		}
		for round := range 20 {
			for i := range runs {
				runs[i].Store(0)
			}
			var err error
			if round%2 == 0 {
				_, err = jobs.Run(context.Background(), [2]int{0, leaves})
			} else {
				err = rt.Go(context.Background(), func(c *Ctx) error { return join(c, 0, leaves) }).Wait()
			}
			var pe *PanicError
			if !errors.As(err, &pe) && !errors.Is(err, errLeaf) {
				t.Fatalf("round %d: error %v, want a *PanicError or the leaf's error", round, err)
			}
			requireRanOnce(t, runs)
		}
		rt.Close()
		for _, w := range rt.workers {
			if w.nforks != 0 || w.forkBase != 0 {
				t.Errorf("worker %d: %d remembered forks (%d promoted) left", w.id, w.nforks, w.forkBase)
			}
		}
		s := rt.Stats()
		t.Logf("%d workers: %d forks, %d promoted, %d steals", rt.Workers(), s.Total.Forks, s.Total.Promoted, s.Total.stealsTotal())
		if rt.Workers() == 1 && s.Total.Promoted != 0 {
			t.Errorf("one worker promoted %d forks; nobody could take them", s.Total.Promoted)
		}
	}
}

// TestPanicUnwindsToTask checks the panic path of Joins: the panic
// unwinds every Join up to the task (their deferred calls run, the code
// after them does not), every half still runs exactly once, including
// halves that panic again while the task joins what the first panic left
// behind, and the worker's list is clean afterwards, so the next task's
// panic is its own.
func TestPanicUnwindsToTask(t *testing.T) {
	rt := newTestRuntime(t, Config{Workers: 1})
	const leaves = 64
	runs := make([]atomic.Int32, leaves)
	var deferred, after atomic.Int32
	var jobs *Jobs[[2]int, int]
	jobs = NewJobs(rt, func(c *Ctx, r [2]int) (int, error) {
		if r[1]-r[0] == 1 {
			runs[r[0]].Add(1)
			if r[0] == 5 || r[0] == 40 || r[0] == 41 {
				panic(r[0])
			}
			return 1, nil
		}
		defer deferred.Add(1)
		mid := (r[0] + r[1]) / 2
		var a, b int
		var err error
		if r[1]-r[0] == 16 { // a Ctx.Join level between Jobs levels
			err = c.Join(
				func(c *Ctx) error { var e error; a, e = jobs.fn(c, [2]int{r[0], mid}); return e },
				func(c *Ctx) error { var e error; b, e = jobs.fn(c, [2]int{mid, r[1]}); return e })
		} else {
			a, b, err = jobs.Join(c, [2]int{r[0], mid}, [2]int{mid, r[1]})
		}
		after.Add(1)
		return a + b, err
	})
	_, err := jobs.Run(context.Background(), [2]int{0, leaves})
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != 5 {
		t.Fatalf("Run = %v, want the first leaf's panic (5) as a *PanicError", err)
	}
	requireRanOnce(t, runs)
	if d := deferred.Load(); d != leaves-1 {
		t.Errorf("%d deferred calls ran, want one per inner node (%d)", d, leaves-1)
	}
	if a := after.Load(); a >= leaves-1 {
		t.Errorf("code after a Join ran %d times: the panic should have skipped it on its way up", a)
	}
	err = rt.Go(context.Background(), func(c *Ctx) error {
		w := c.w
		if w.nforks != 0 || w.forkBase != 0 {
			t.Errorf("after the panic: %d forks, base %d", w.nforks, w.forkBase)
		}
		return c.Join(nil, func(*Ctx) error { panic("again") })
	}).Wait()
	if !errors.As(err, &pe) || pe.Value != "again" {
		t.Errorf("next task = %v, want its own panic", err)
	}
}

// A panic in a half that a thief runs ends the thief's task, and the
// Join that waited for it raises it again once its first half is done:
// the joiner's task ends with the thief's *PanicError (its value, and the
// stack where it panicked), the code after the Join does not run, and
// the forks below the joining task's base are joined. Both Join forms,
// on two virtual workers: the first half waits for a thief, so the test
// needs two workers whatever CPUs it may use.
func TestStolenPanicEndsJoiningTask(t *testing.T) {
	rt := virtualRuntimeWith(t, "16amd64-8n2c", "", Config{Workers: 2})
	if rt.Workers() != 2 {
		t.Fatalf("%d workers, want 2", rt.Workers())
	}
	var bStarted atomic.Bool
	stolenHalf := func(*Ctx) error {
		bStarted.Store(true)
		panicInStolenHalf()
		return nil
	}
	// The first half forks (empty Joins) until a thief has b: each fork
	// offers the oldest remembered fork, b, to the idle worker.
	untilStolen := func(c *Ctx) error {
		for !bStarted.Load() {
			if err := c.Join(nil, nil); err != nil {
				return err
			}
			goruntime.Gosched()
		}
		return nil
	}
	js := NewJobs(rt, func(c *Ctx, i int) (int, error) {
		if i == 0 {
			return 0, untilStolen(c)
		}
		return 0, stolenHalf(c)
	})
	for _, form := range []string{"Ctx.Join", "Jobs.Join"} {
		bStarted.Store(false)
		var outer, after atomic.Int32
		err := rt.Go(context.Background(), func(c *Ctx) error {
			return c.Join(func(c *Ctx) error {
				var err error
				if form == "Ctx.Join" {
					err = c.Join(untilStolen, stolenHalf)
				} else {
					_, _, err = js.Join(c, 0, 1)
				}
				after.Add(1)
				return err
			}, func(*Ctx) error { outer.Add(1); return nil })
		}).Wait()
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Value != "stolen" || !strings.Contains(string(pe.Stack), "panicInStolenHalf") {
			t.Fatalf("%s: task = %v, want the stolen half's panic with its stack", form, err)
		}
		if after.Load() != 0 || outer.Load() != 1 {
			t.Errorf("%s: code after the Join ran %d times, the outer second half %d (want 0, 1)", form, after.Load(), outer.Load())
		}
	}
	if s := rt.Stats(); s.Total.stealsTotal() == 0 {
		t.Errorf("no steal counted")
	}
}

//go:noinline
func panicInStolenHalf() { panic("stolen") }

// A recover in a task's body that stops a panic on its way through a Join
// leaves that Join's fork open: the task runs its second half once after
// the body returns and fails with errJoinSkipped. A recover inside a half
// makes the Join above it find its forks out of order: the task ends
// with that panic, and every half still runs once.
func TestRecoverInBodyRunsSkippedHalves(t *testing.T) {
	rt := newTestRuntime(t, Config{Workers: 1})
	var runs [3]atomic.Int32
	err := rt.Go(context.Background(), func(c *Ctx) error {
		defer func() { _ = recover() }()
		return c.Join(func(*Ctx) error { runs[0].Add(1); panic("a") }, func(*Ctx) error { runs[1].Add(1); return nil })
	}).Wait()
	if !errors.Is(err, errJoinSkipped) || runs[0].Load() != 1 || runs[1].Load() != 1 {
		t.Errorf("recover in the body: task = %v, halves ran %d, %d times; want errJoinSkipped, 1, 1", err, runs[0].Load(), runs[1].Load())
	}
	for i := range runs {
		runs[i].Store(0)
	}
	err = rt.Go(context.Background(), func(c *Ctx) error {
		return c.Join(func(c *Ctx) error {
			defer func() { _ = recover() }()
			return c.Join(func(*Ctx) error { runs[0].Add(1); panic("inner") }, func(*Ctx) error { runs[1].Add(1); return nil })
		}, func(*Ctx) error { runs[2].Add(1); return nil })
	}).Wait()
	var pe *PanicError
	if !errors.As(err, &pe) || !strings.Contains(fmt.Sprint(pe.Value), "out of order") {
		t.Errorf("recover in a half: task = %v, want the out-of-order panic", err)
	}
	for i := range runs {
		if n := runs[i].Load(); n != 1 {
			t.Errorf("recover in a half: half %d ran %d times, want 1", i, n)
		}
	}
	if s := rt.Stats(); s.Total.Forks == 0 {
		t.Errorf("no fork counted")
	}
}

// TestPromoteBackoff checks promote's back-off on a one-worker runtime,
// driving the worker's fork list by hand (and promoting as if another
// worker could take the fork): each promotion taken back doubles the
// number of forks that pass unpromoted, up to the bound; a promotion lost
// to a thief ends the back-off, and so does the start of a task; a
// skipped fork pushes nothing.
func TestPromoteBackoff(t *testing.T) {
	rt := newTestRuntime(t, Config{Workers: 1, promoteBackoff: 20})
	err := rt.Go(context.Background(), func(c *Ctx) error {
		w := c.w
		w.alone = false
		defer func() { w.alone = true }()
		for i, want := range []int{1, 3, 7, 15, 20, 20} {
			w.tookBack()
			if w.promoteSkip != want || w.promoteBackoff != want {
				t.Errorf("after %d take-backs: skip %d, back-off %d; want %d", i+1, w.promoteSkip, w.promoteBackoff, want)
			}
		}
		var f Task
		k := w.remember(&f)
		for range 20 {
			w.promote()
		}
		if n := w.stealQ.Len(); n != 0 || w.forkBase != 0 || w.promoteSkip != 0 {
			t.Errorf("after skipping 20 forks: deque holds %d, forkBase %d, skip %d; want 0, 0, 0", n, w.forkBase, w.promoteSkip)
		}
		w.promote()
		if n := w.stealQ.Len(); n != 1 || w.forkBase != 1 {
			t.Errorf("after the back-off: deque holds %d, forkBase %d; want 1, 1", n, w.forkBase)
		}
		if w.forget(k) {
			t.Error("forget: a promoted fork reported as only remembered")
		}
		if p := w.dq.Pop(); p != &f {
			t.Errorf("Pop = %p, want the promoted fork %p", p, &f)
		}
		w.endBackoff()
		if w.promoteSkip != 0 || w.promoteBackoff != 0 {
			t.Errorf("after a steal: skip %d, back-off %d; want 0, 0", w.promoteSkip, w.promoteBackoff)
		}
		w.tookBack()
		return nil
	}).Wait()
	if err != nil {
		t.Fatal(err)
	}
	// The next task starts without the back-off the last one left.
	err = rt.Go(context.Background(), func(c *Ctx) error {
		if w := c.w; w.promoteSkip != 0 || w.promoteBackoff != 0 {
			t.Errorf("a new task: skip %d, back-off %d; want 0, 0", w.promoteSkip, w.promoteBackoff)
		}
		return nil
	}).Wait()
	if err != nil {
		t.Fatal(err)
	}
}
