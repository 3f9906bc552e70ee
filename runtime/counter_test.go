package runtime

import (
	"context"
	"testing"
)

// Increments through Inc, Add and Local from every worker all reach the
// total once the runtime is closed (every worker folds as it exits).
func TestCounterFoldsEveryWay(t *testing.T) {
	rt, err := New(Config{foldEvery: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	c := rt.NewCounter()
	const chunks, per = 64, 1000
	err = parallelFor(rt, context.Background(), 0, chunks, 1, func(ctx *Ctx, lo, hi int) error {
		for i := lo; i < hi; i++ {
			l := c.Local(ctx)
			for range per {
				l.Inc()
			}
			c.Inc(ctx)
			c.Add(ctx, 2)
			l.Add(3)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	if got, want := c.Load(), uint64(chunks*(per+6)); got != want {
		t.Errorf("Load() = %d after Close, want %d", got, want)
	}
}
