package main

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/numasteal/numasteal/examples/forkjoin/msort"
	"github.com/numasteal/numasteal/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newRuntime(t *testing.T) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		t.Fatalf("runtime.New: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// sortN is the length TestSortTenMillion sorts, with or without -race.
const sortN = 10_000_000

// TestSortTenMillion sorts sortN random ints on the runtime and checks the
// result against slices.Sort and, independently, that it is ordered and a
// permutation of the input.
func TestSortTenMillion(t *testing.T) {
	rt := newRuntime(t)
	input := msort.RandomInts(sortN, 42)
	got := slices.Clone(input)
	start := time.Now()
	if err := msort.Sort(context.Background(), rt, got, msort.DefaultGrain); err != nil {
		t.Fatal(err)
	}
	t.Logf("Sort of %d ints on %d workers: %v", sortN, rt.Workers(), time.Since(start))
	if !slices.IsSorted(got) {
		i := 1
		for got[i-1] <= got[i] {
			i++
		}
		t.Fatalf("result not sorted: s[%d] = %d > s[%d] = %d", i-1, got[i-1], i, got[i])
	}
	if a, b := fingerprint(input), fingerprint(got); a != b {
		t.Fatalf("result is not a permutation of the input: multiset fingerprint %x, want %x", b, a)
	}
	want := input // slices.Sort in place: input is not needed any more
	start = time.Now()
	slices.Sort(want)
	t.Logf("slices.Sort: %v", time.Since(start))
	if i := firstDiff(got, want); i >= 0 {
		t.Fatalf("s[%d] = %d, slices.Sort has %d", i, got[i], want[i])
	}
}

// TestSortShapes covers the edges of the recursion with a small grain:
// empty, shorter than the grain, odd lengths, duplicates, sorted and
// reversed inputs.
func TestSortShapes(t *testing.T) {
	rt := newRuntime(t)
	rev := func(n int) []int {
		s := make([]int, n)
		for i := range s {
			s[i] = n - i
		}
		return s
	}
	dups := func(n int) []int {
		s := msort.RandomInts(n, 7)
		for i := range s {
			s[i] %= 5
		}
		return s
	}
	tests := []struct {
		name  string
		in    []int
		grain int
	}{
		{"empty", nil, 4},
		{"one", []int{3}, 4},
		{"below grain", []int{3, 1, 2}, 4},
		{"odd", msort.RandomInts(1001, 1), 4},
		{"grain 2", msort.RandomInts(777, 2), 2},
		{"duplicates", dups(5000), 8},
		{"sorted", slices.Sorted(slices.Values(msort.RandomInts(4096, 4))), 8},
		{"reversed", rev(4099), 8},
		{"negative", []int{-5, 9, -1 << 62, 1<<62 + 3, 0, -5}, 2},
		{"default grain", msort.RandomInts(100_003, 3), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Clone(tt.in)
			if err := msort.Sort(context.Background(), rt, got, tt.grain); err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(tt.in)
			slices.Sort(want)
			if i := firstDiff(got, want); i >= 0 {
				t.Errorf("len %d: s[%d] = %d, want %d", len(got), i, got[i], want[i])
			}
		})
	}
}

func TestSortCanceled(t *testing.T) {
	rt := newRuntime(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := msort.Sort(ctx, rt, msort.RandomInts(100_000, 5), 64)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Sort with a canceled context = %v, want context.Canceled", err)
	}
}

// firstDiff returns the first index where a and b differ, or -1.
func firstDiff(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// fingerprint is an order-independent hash of a multiset of ints: the sum
// and the xor of a mixing function of each element. A lost, duplicated or
// changed element changes it with overwhelming probability.
func fingerprint(s []int) [2]uint64 {
	var sum, x uint64
	for _, v := range s {
		h := uint64(v) * 0x9E3779B97F4A7C15
		h ^= h >> 29
		h *= 0xBF58476D1CE4E5B9
		h ^= h >> 32
		sum += h
		x ^= h
	}
	return [2]uint64{sum, x}
}

// TestSortIn sorts inside a task, as bench forkjoin --peers does, and
// rejects scratch of the wrong length before touching the input.
func TestSortIn(t *testing.T) {
	rt := newRuntime(t)
	in := msort.RandomInts(5003, 9)
	got, tmp := slices.Clone(in), make([]int, len(in))
	err := rt.Go(context.Background(), func(c *runtime.Ctx) error { return msort.SortIn(c, got, tmp, 16) }).Wait()
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(in))
	if i := firstDiff(got, want); i >= 0 {
		t.Errorf("s[%d] = %d, want %d", i, got[i], want[i])
	}
	short := slices.Clone(in)
	err = rt.Go(context.Background(), func(c *runtime.Ctx) error { return msort.SortIn(c, short, tmp[:10], 16) }).Wait()
	if err == nil || !slices.Equal(short, in) {
		t.Errorf("scratch of 10 for %d: err %v, input changed %v", len(in), err, !slices.Equal(short, in))
	}
}
