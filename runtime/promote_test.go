package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

// TestPromotedForksRunOnceWithPanics runs a Jobs recursion and a closure
// Join recursion whose leaves sometimes panic or fail, on 16 virtual
// workers (so forks are promoted and stolen) and on one worker (never
// promoted): every leaf runs exactly once, every panic surfaces as a
// *PanicError at the join, and each worker's remembered-fork list is
// empty again afterwards.
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

// TestPanicUnwindsToOutermostJoin checks the panic path of Joins below a
// task's outermost one: the panic unwinds the Joins in between (their
// deferred calls run, the code after them does not), every half still
// runs exactly once, including halves that panic again while the
// outermost Join joins what the first panic left behind, and the worker's
// list and guard are clean afterwards, so the next task's Joins recover
// their own panics.
func TestPanicUnwindsToOutermostJoin(t *testing.T) {
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
		if w.nforks != 0 || w.forkBase != 0 || w.guarded {
			t.Errorf("after the panic: %d forks, base %d, guarded %v", w.nforks, w.forkBase, w.guarded)
		}
		err := c.Join(nil, func(*Ctx) error { panic("again") })
		if !errors.As(err, &pe) || pe.Value != "again" {
			t.Errorf("next task's Join = %v, want its own panic", err)
		}
		return nil
	}).Wait()
	if err != nil {
		t.Fatal(err)
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
