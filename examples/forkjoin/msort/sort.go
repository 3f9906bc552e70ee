// Package msort is the parallel merge sort of examples/forkjoin, importable
// so that numasteal bench forkjoin measures the same code.
package msort

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/numasteal/numasteal/runtime"
)

// DefaultGrain is the length below which Sort hands a run to slices.Sort
// and a merge to the sequential loop. Each level of merging is a pass over
// the whole slice, so a larger grain saves passes (10M ints: 8 merge levels
// at 1<<16 instead of 11 at 1<<13) while still cutting the work into ~150
// leaves, enough to keep tens of workers busy. On one worker it costs
// about what slices.Sort does; a smaller grain's extra merge passes make
// it slower than slices.Sort there.
const DefaultGrain = 1 << 16

// Sort sorts s in increasing order on rt's workers and returns when it is
// done. grain < 2 means DefaultGrain. It fails only when ctx is canceled
// before the sort ends (s is then partly sorted) or when rt is closed.
func Sort(ctx context.Context, rt *runtime.Runtime, s []int, grain int) error {
	if grain < 2 {
		grain = DefaultGrain
	}
	if len(s) <= grain {
		slices.Sort(s)
		return nil
	}
	tmp := make([]int, len(s))
	err := rt.Go(ctx, func(c *runtime.Ctx) error {
		return sortTo(c, s, tmp, false, grain)
	}).Wait()
	if err != nil {
		return fmt.Errorf("forkjoin: sorting %d ints: %w", len(s), err)
	}
	return nil
}

// SortIn is Sort inside a task of the runtime: it sorts s on c's worker
// and whichever workers steal its halves, using tmp (as long as s) as
// scratch, and returns when it is done. grain < 2 means DefaultGrain.
func SortIn(c *runtime.Ctx, s, tmp []int, grain int) error {
	if grain < 2 {
		grain = DefaultGrain
	}
	if len(tmp) != len(s) {
		return fmt.Errorf("forkjoin: scratch of %d ints for %d", len(tmp), len(s))
	}
	return sortTo(c, s, tmp, false, grain)
}

// sortTo sorts src, using dst (of the same length) as scratch, and leaves
// the result in dst when toDst, else in src. The halves are sorted into the
// other buffer than the result, so the final merge moves them into place.
func sortTo(c *runtime.Ctx, src, dst []int, toDst bool, grain int) error {
	if len(src) <= grain {
		slices.Sort(src)
		if toDst {
			copy(dst, src)
		}
		return nil
	}
	if err := c.Err(); err != nil {
		return err
	}
	mid := len(src) / 2
	err := c.Join(
		func(c *runtime.Ctx) error { return sortTo(c, src[:mid], dst[:mid], !toDst, grain) },
		func(c *runtime.Ctx) error { return sortTo(c, src[mid:], dst[mid:], !toDst, grain) },
	)
	if err != nil {
		return err
	}
	// The halves are sorted where the result is not: merge them across.
	from, to := dst, src
	if toDst {
		from, to = src, dst
	}
	return merge(c, from[:mid], from[mid:], to, grain)
}

// merge merges the sorted runs a and b into out (len(a)+len(b) long, not
// overlapping them), in parallel above grain elements.
func merge(c *runtime.Ctx, a, b, out []int, grain int) error {
	if len(a) < len(b) {
		a, b = b, a
	}
	if len(a)+len(b) <= grain {
		mergeSeq(a, b, out)
		return nil
	}
	// a holds at least half of the elements and grain >= 2, so both
	// halves below are shorter than a+b: the recursion ends.
	ma := len(a) / 2
	mb, _ := slices.BinarySearch(b, a[ma])
	return c.Join(
		func(c *runtime.Ctx) error { return merge(c, a[:ma], b[:mb], out[:ma+mb], grain) },
		func(c *runtime.Ctx) error { return merge(c, a[ma:], b[mb:], out[ma+mb:], grain) },
	)
}

// mergeSeq merges the sorted runs a and b into out.
func mergeSeq(a, b, out []int) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if b[j] < a[i] {
			out[k] = b[j]
			j++
		} else {
			out[k] = a[i]
			i++
		}
		k++
	}
	k += copy(out[k:], a[i:])
	copy(out[k:], b[j:])
}

// RandomInts returns n pseudo-random ints drawn from a PCG seeded with seed.
func RandomInts(n int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, seed^0x9E3779B97F4A7C15))
	s := make([]int, n)
	for i := range s {
		s[i] = int(r.Uint64() >> 1)
	}
	return s
}
