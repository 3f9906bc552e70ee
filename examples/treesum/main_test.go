package main

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/numasteal/numasteal/examples/treesum/btree"
	"github.com/numasteal/numasteal/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSumsAgree sums trees of every small size and one large one on one
// worker and on all, against the serial sum and n(n+1)/2.
func TestSumsAgree(t *testing.T) {
	for _, workers := range []int{1, 0} {
		rt, err := runtime.New(runtime.Config{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		sum := btree.NewSum(rt)
		for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 100, 1 << 20} {
			root := btree.New(n)
			want := int64(n) * int64(n+1) / 2
			got, err := sum.Run(context.Background(), root)
			if err != nil || got != want || btree.SumSerial(root) != want {
				t.Errorf("workers %d, n %d: Jobs sum %d, %v; serial %d; want %d", workers, n, got, err, btree.SumSerial(root), want)
			}
		}
		rt.Close()
	}
}

func TestRun(t *testing.T) {
	if err := run([]string{"-n", "10000", "-reps", "1"}); err != nil {
		t.Fatal(err)
	}
}
