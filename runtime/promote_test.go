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
			if len(w.forks) != 0 || w.forkBase != 0 {
				t.Errorf("worker %d: %d remembered forks (%d promoted) left", w.id, len(w.forks), w.forkBase)
			}
		}
		s := rt.Stats()
		t.Logf("%d workers: %d forks, %d promoted, %d steals", rt.Workers(), s.Total.Forks, s.Total.Promoted, s.Total.stealsTotal())
		if rt.Workers() == 1 && s.Total.Promoted != 0 {
			t.Errorf("one worker promoted %d forks; nobody could take them", s.Total.Promoted)
		}
	}
}
