package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

// Two Jobs and closure Joins that call each other, so that Joins of
// different kinds take turns at the same positions of a worker's fork
// list (where Jobs.Join's fast path finds its job), on 16 virtual workers
// with thieves and on one worker, with leaves that sometimes panic: every
// leaf runs once per round, the sums are right when nothing panicked, and
// nothing is left running after Close.
func TestJobsSharingForkPositions(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, rt := range []*Runtime{virtualRuntime(t, "16amd64-8n2c"), newTestRuntime(t, Config{Workers: 1})} {
		const leaves = 1 << 11
		runs := make([]atomic.Int32, leaves)
		var panics bool
		leaf := func(i int) int {
			runs[i].Add(1)
			burn(30)
			if panics && i%509 == 0 {
				panic("leaf panicked")
			}
			return i
		}
		var even *Jobs[[2]int, int]
		var odd *Jobs[[2]int, int64]
		var closures func(c *Ctx, lo, hi int) int
		even = NewJobs(rt, func(c *Ctx, r [2]int) (int, error) {
			if r[1]-r[0] == 1 {
				return leaf(r[0]), nil
			}
			mid := (r[0] + r[1]) / 2
			a, b, err := odd.Join(c, [2]int{r[0], mid}, [2]int{mid, r[1]})
			return int(a + b), err
		})
		odd = NewJobs(rt, func(c *Ctx, r [2]int) (int64, error) {
			if r[1]-r[0] == 1 {
				return int64(leaf(r[0])), nil
			}
			if r[0]%3 == 0 {
				return int64(closures(c, r[0], r[1])), nil
			}
			mid := (r[0] + r[1]) / 2
			a, b, err := even.Join(c, [2]int{r[0], mid}, [2]int{mid, r[1]})
			return int64(a + b), err
		})
		closures = func(c *Ctx, lo, hi int) int {
			if hi-lo == 1 {
				return leaf(lo)
			}
			mid := (lo + hi) / 2
			var a, b int
			var errA, errB error
			c.Join(func(c *Ctx) error { a, errA = even.fn(c, [2]int{lo, mid}); return errA },
				func(c *Ctx) error { b, errB = even.fn(c, [2]int{mid, hi}); return errB })
			return a + b
		}
		for round := range 30 {
			clear(runs)
			panics = round%3 == 2
			got, err := even.Run(context.Background(), [2]int{0, leaves})
			requireRanOnce(t, runs)
			if panics {
				var pe *PanicError
				if !errors.As(err, &pe) {
					t.Fatalf("%d workers, round %d: error %v, want a *PanicError", rt.Workers(), round, err)
				}
				continue
			}
			if want := leaves * (leaves - 1) / 2; err != nil || got != want {
				t.Fatalf("%d workers, round %d: %d, %v; want %d", rt.Workers(), round, got, err, want)
			}
		}
		rt.Close()
		for _, w := range rt.workers {
			if w.nforks != 0 || w.forkBase != 0 {
				t.Errorf("worker %d: %d remembered forks (%d promoted) left", w.id, w.nforks, w.forkBase)
			}
		}
	}
}

// leafError is the error of leaf i in TestJobsJoinErrors.
type leafError int

func (e leafError) Error() string { return "leaf failed" }

// Jobs.Join with halves that fail, on 16 virtual workers with thieves and
// on one worker: both halves run and return their results whatever the
// other's error, so every leaf runs once and the sum is whole, and the
// error is the first half's if it has one (the leftmost failed leaf);
// every few rounds no leaf fails.
func TestJobsJoinErrors(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, rt := range []*Runtime{virtualRuntime(t, "16amd64-8n2c"), newTestRuntime(t, Config{Workers: 1})} {
		const leaves = 1 << 11
		runs := make([]atomic.Int32, leaves)
		var every int
		var sum *Jobs[[2]int, int]
		sum = NewJobs(rt, func(c *Ctx, r [2]int) (int, error) {
			if r[1]-r[0] == 1 {
				i := r[0]
				runs[i].Add(1)
				burn(30)
				if every > 0 && i%every == every-1 {
					return i, leafError(i)
				}
				return i, nil
			}
			mid := (r[0] + r[1]) / 2
			a, b, err := sum.Join(c, [2]int{r[0], mid}, [2]int{mid, r[1]})
			return a + b, err
		})
		for round := range 40 {
			clear(runs)
			every = []int{0, 2, 97, 1500}[round%4]
			got, err := sum.Run(context.Background(), [2]int{0, leaves})
			requireRanOnce(t, runs)
			if want := leaves * (leaves - 1) / 2; got != want {
				t.Fatalf("%d workers, round %d: sum %d, want %d", rt.Workers(), round, got, want)
			}
			var want error
			if every > 0 {
				want = leafError(every - 1)
			}
			if err != want {
				t.Fatalf("%d workers, round %d: error %v, want %v", rt.Workers(), round, err, want)
			}
		}
		rt.Close()
		for _, w := range rt.workers {
			if w.nforks != 0 || w.forkBase != 0 {
				t.Errorf("worker %d: %d remembered forks (%d promoted) left", w.id, w.nforks, w.forkBase)
			}
		}
	}
}

// A loop of Jobs.Joins in one task's body, each at the task's base
// position of the fork list, on 16 virtual workers with thieves and on
// one worker: every half runs once and each Join returns both results,
// or the error of the half that failed, while the loop goes on; a half
// that panics ends the task with its panic as a *PanicError once both
// halves of its Join have run, and no later Join runs. No fork is left
// remembered after Close.
func TestJobsLoopInOneTask(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, rt := range []*Runtime{virtualRuntime(t, "16amd64-8n2c"), newTestRuntime(t, Config{Workers: 1})} {
		const joins = 4096
		for _, panicAt := range []int{-1, 2*1500 + 1, 2 * 3000} {
			runs := make([]atomic.Int32, 2*joins)
			js := NewJobs(rt, func(c *Ctx, i int) (int, error) {
				runs[i].Add(1)
				burn(30)
				switch {
				case i == panicAt:
					panic(i)
				case i%97 == 13:
					return i, leafError(i)
				}
				return i, nil
			})
			err := rt.Go(context.Background(), func(c *Ctx) error {
				for i := range joins {
					a, b := 2*i, 2*i+1
					ra, rb, err := js.Join(c, a, b)
					switch {
					case a == panicAt || b == panicAt:
						t.Errorf("Join(%d, %d) returned after a panic in a half", a, b)
					case a%97 == 13 || b%97 == 13:
						want := a
						if b%97 == 13 {
							want = b
						}
						if err != leafError(want) || ra != a || rb != b {
							t.Errorf("Join(%d, %d) = %d, %d, %v; want %d, %d, the error of %d", a, b, ra, rb, err, a, b, want)
						}
					default:
						if err != nil || ra != a || rb != b {
							t.Errorf("Join(%d, %d) = %d, %d, %v; want %d, %d, nil", a, b, ra, rb, err, a, b)
						}
					}
				}
				return nil
			}).Wait()
			ran := len(runs)
			if panicAt >= 0 {
				var pe *PanicError
				if !errors.As(err, &pe) || pe.Value != any(panicAt) {
					t.Fatalf("%d workers: the loop's task = %v, want the panic of %d as a *PanicError", rt.Workers(), err, panicAt)
				}
				ran = panicAt/2*2 + 2 // up to the panicking Join's two halves
			} else if err != nil {
				t.Fatalf("%d workers: the loop's task: %v", rt.Workers(), err)
			}
			requireRanOnce(t, runs[:ran])
			for i := ran; i < len(runs); i++ {
				if n := runs[i].Load(); n != 0 {
					t.Fatalf("%d workers: half %d ran %d times after the panic at %d ended the task", rt.Workers(), i, n, panicAt)
				}
			}
		}
		rt.Close()
		for _, w := range rt.workers {
			if w.nforks != 0 || w.forkBase != 0 {
				t.Errorf("worker %d: %d remembered forks (%d promoted) left", w.id, w.nforks, w.forkBase)
			}
		}
	}
}
