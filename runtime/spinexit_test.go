package runtime

import (
	"context"
	"sync/atomic"
	"testing"
)

// A helping wait (Ctx.Wait, a stolen Join's wait) must not return to its
// task with the worker still counted as spinning: the task then runs user
// code, not a search, while producers rely on a spinner to find their work.
func TestHelpingWaitReturnsNotSpinning(t *testing.T) {
	rt := virtualRuntime(t, "16amd64-8n2c")
	var bad, checks atomic.Int64
	check := func(c *Ctx) {
		checks.Add(1)
		if c.w.spinning {
			bad.Add(1)
		}
	}
	var rec func(c *Ctx, n int) error
	rec = func(c *Ctx, n int) error {
		if n < 2 {
			burn(500)
			return nil
		}
		if n%3 == 0 {
			g := c.Group()
			c.Go(g, func(c *Ctx) error { return rec(c, n-1) })
			c.Go(g, func(c *Ctx) error { return rec(c, n-2) })
			err := c.Wait(g)
			check(c)
			return err
		}
		err := c.Join(func(c *Ctx) error { return rec(c, n-1) }, func(c *Ctx) error { return rec(c, n-2) })
		check(c)
		return err
	}
	for range 50 {
		if err := rt.Go(context.Background(), func(c *Ctx) error { return rec(c, 16) }).Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if bad.Load() > 0 {
		t.Errorf("%d of %d waits returned to their task with the worker counted as spinning", bad.Load(), checks.Load())
	}
}
