package runtime

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

// forEachRange runs ParallelFor with grain 0 over [lo, hi) on rt, counting
// every index it is given in runs (index i at runs[i-lo]), and checks that
// each chunk is non-empty and inside the range.
func forEachRange(t *testing.T, rt *Runtime, ctx context.Context, lo, hi int, runs []atomic.Int32, body func(c *Ctx, lo, hi int) error) error {
	t.Helper()
	var bad atomic.Int32
	err := parallelFor(rt, ctx, lo, hi, 0, func(c *Ctx, clo, chi int) error {
		if clo >= chi || clo < lo || chi > hi {
			bad.Add(1)
			return nil
		}
		for i := clo; i < chi; i++ {
			runs[i-lo].Add(1)
		}
		if body != nil {
			return body(c, clo, chi)
		}
		return nil
	})
	if n := bad.Load(); n != 0 {
		t.Errorf("[%d, %d): %d chunks empty or outside the range", lo, hi, n)
	}
	return err
}

// ParallelFor with grain 0 gives every index of the range to fn exactly
// once, on one worker (never split) and on 16 virtual workers (split for
// thieves), whatever an index costs.
func TestParallelForAutoGrainEveryIndexOnce(t *testing.T) {
	for _, rt := range []*Runtime{newTestRuntime(t, Config{Workers: 1}), virtualRuntime(t, "16amd64-8n2c")} {
		for _, r := range [][2]int{{0, 0}, {5, 6}, {0, 1000}, {-50, 100_000}, {7, 1 << 18}} {
			for _, cost := range []int{0, 200} {
				runs := make([]atomic.Int32, r[1]-r[0])
				err := forEachRange(t, rt, context.Background(), r[0], r[1], runs, func(c *Ctx, lo, hi int) error {
					for i := lo; i < hi; i++ {
						burn(cost * (i % 7))
					}
					return nil
				})
				if err != nil {
					t.Fatalf("%d workers, [%d, %d): %v", rt.Workers(), r[0], r[1], err)
				}
				requireRanOnce(t, runs)
			}
		}
	}
}

// An error of one chunk is ParallelFor's error, and every other chunk still
// runs; a panic in a chunk is the task's *PanicError, after every chunk
// that the split halves hold has run exactly once.
func TestParallelForAutoGrainErrorsAndPanics(t *testing.T) {
	errChunk := errors.New("chunk failed")
	for _, rt := range []*Runtime{newTestRuntime(t, Config{Workers: 1}), virtualRuntime(t, "16amd64-8n2c")} {
		const n = 50_000
		runs := make([]atomic.Int32, n)
		err := forEachRange(t, rt, context.Background(), 0, n, runs, func(c *Ctx, lo, hi int) error {
			burn(100 * (hi - lo))
			if lo <= n/3 && n/3 < hi {
				return errChunk
			}
			return nil
		})
		if !errors.Is(err, errChunk) {
			t.Errorf("%d workers: error %v, want %v", rt.Workers(), err, errChunk)
		}
		requireRanOnce(t, runs)

		clear(runs)
		err = forEachRange(t, rt, context.Background(), 0, n, runs, func(c *Ctx, lo, hi int) error {
			burn(100 * (hi - lo))
			if lo <= n/2 && n/2 < hi {
				panic("chunk panicked")
			}
			return nil
		})
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Value != "chunk panicked" {
			t.Fatalf("%d workers: error %v, want the chunk's panic", rt.Workers(), err)
		}
		for i := range runs {
			if k := runs[i].Load(); k > 1 {
				t.Fatalf("%d workers: index %d ran %d times", rt.Workers(), i, k)
			}
		}
		if runs[n/2].Load() != 1 {
			t.Errorf("%d workers: the panicking chunk's index did not run", rt.Workers())
		}
	}
}

// Canceling the task's context stops ParallelFor with grain 0: the chunks
// not yet started are skipped, it returns the context's error, and no
// index runs twice.
func TestParallelForAutoGrainCanceled(t *testing.T) {
	for _, rt := range []*Runtime{newTestRuntime(t, Config{Workers: 1}), virtualRuntime(t, "16amd64-8n2c")} {
		const n = 1 << 20
		runs := make([]atomic.Int32, n)
		ctx, cancel := context.WithCancel(context.Background())
		var chunks atomic.Int32
		err := forEachRange(t, rt, ctx, 0, n, runs, func(c *Ctx, lo, hi int) error {
			burn(50 * (hi - lo))
			if chunks.Add(1) == 20 {
				cancel()
			}
			return nil
		})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%d workers: error %v, want context.Canceled", rt.Workers(), err)
		}
		ran := 0
		for i := range runs {
			switch runs[i].Load() {
			case 0:
			case 1:
				ran++
			default:
				t.Fatalf("%d workers: index %d ran %d times", rt.Workers(), i, runs[i].Load())
			}
		}
		if ran == n {
			t.Errorf("%d workers: every index ran after the cancellation", rt.Workers())
		}
	}
}

// Many ParallelFors with grain 0, from several outside goroutines at once,
// some nested in the chunks of others, on 16 virtual workers: every index
// runs once, and nothing is left running after Close.
func TestParallelForAutoGrainStress(t *testing.T) {
	defer goleak.VerifyNone(t)
	rt := virtualRuntime(t, "16amd64-8n2c")
	const outer, inner = 64, 300
	runs := make([]atomic.Int32, outer*inner)
	done := make(chan error, 4)
	for g := range 4 {
		go func() {
			done <- parallelFor(rt, context.Background(), g*outer/4, (g+1)*outer/4, 0, func(c *Ctx, lo, hi int) error {
				for o := lo; o < hi; o++ {
					err := c.ParallelFor(0, inner, 0, func(c *Ctx, ilo, ihi int) error {
						for i := ilo; i < ihi; i++ {
							burn(20 * (i % 13))
							runs[o*inner+i].Add(1)
						}
						return nil
					})
					if err != nil {
						return err
					}
				}
				return nil
			})
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	requireRanOnce(t, runs)
	rt.Close()
}
