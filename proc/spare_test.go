package proc

import (
	goruntime "runtime"
	"testing"
)

func TestSpareProcs(t *testing.T) {
	n := goruntime.GOMAXPROCS(0)
	for _, tc := range []struct{ slots, want int }{
		{-1, n},
		{0, n},
		{1, n + 1},
		{n, 2 * n},
		{3 * n, 2 * n}, // at most doubled
	} {
		restore := SpareProcs(tc.slots)
		if got := goruntime.GOMAXPROCS(0); got != tc.want {
			t.Errorf("SpareProcs(%d) on GOMAXPROCS %d: GOMAXPROCS %d, want %d", tc.slots, n, got, tc.want)
		}
		restore()
		if got := goruntime.GOMAXPROCS(0); got != n {
			t.Fatalf("after restore of SpareProcs(%d): GOMAXPROCS %d, want %d", tc.slots, got, n)
		}
	}
}
