package runtime

import (
	"context"
	"testing"
)

// TestNoAllocs checks that the fork-join fast paths allocate nothing once
// warm: measured with testing.AllocsPerRun inside a running task of a
// one-worker runtime (so that nothing is stolen and every run takes the
// same path; a steal allocates nothing either, but would make the count
// depend on timing).
func TestNoAllocs(t *testing.T) {
	rt := newTestRuntime(t, Config{Workers: 1})
	nopJobs := NewJobs(rt, func(c *Ctx, n int) (int, error) { return n, nil })
	fib := newFibJobs(rt)
	cnt := rt.NewCounter()
	reusable := &Task{Fn: benchNop}

	tests := []struct {
		name string
		// setup runs once in the task and returns the body to measure.
		setup func(c *Ctx) func()
	}{
		{"Jobs.Join", func(c *Ctx) func() {
			return func() { nopJobs.Join(c, 1, 2) }
		}},
		{"Jobs.Join recursive (fib 10)", func(c *Ctx) func() {
			return func() { fib.fn(c, 10) }
		}},
		{"Ctx.Join static funcs", func(c *Ctx) func() {
			return func() { c.Join(benchNop, benchNop) }
		}},
		{"Counter.Inc", func(c *Ctx) func() {
			return func() { cnt.Inc(c) }
		}},
		{"Counter.Add", func(c *Ctx) func() {
			return func() { cnt.Add(c, 3) }
		}},
		{"Ctx.Spawn reusable Task + Wait", func(c *Ctx) func() {
			g := c.Group() // reused: a Group may be used again after Wait
			return func() {
				c.Spawn(g, reusable)
				if err := c.Wait(g); err != nil {
					t.Error(err)
				}
			}
		}},
		{"Ctx.Err", func(c *Ctx) func() {
			return func() { _ = c.Err() }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var allocs float64
			err := rt.Go(context.Background(), func(c *Ctx) error {
				body := tt.setup(c)
				for range 100 { // warm-up: fill the free lists
					body()
				}
				allocs = testing.AllocsPerRun(1000, body)
				return nil
			}).Wait()
			if err != nil {
				t.Fatal(err)
			}
			if allocs != 0 {
				t.Errorf("%s: %v allocations per run, want 0", tt.name, allocs)
			}
		})
	}
}

// newFibJobs returns fib as a Jobs: a task per call, no allocation.
func newFibJobs(rt *Runtime) *Jobs[int, int] {
	var fib *Jobs[int, int]
	fib = NewJobs(rt, func(c *Ctx, n int) (int, error) {
		if n < 2 {
			return n, nil
		}
		a, b, err := fib.Join(c, n-1, n-2)
		return a + b, err
	})
	return fib
}
