package bench

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/numasteal/numasteal/runtime"
	"github.com/numasteal/numasteal/topology"
)

// CounterRow is one line of the counter cost table.
type CounterRow struct {
	Name    string  `json:"name"`
	NsPerOp float64 `json:"ns_per_op"`
	// Threads is how many workers incremented at once.
	Threads int `json:"threads"`
}

// CountersOptions configure RunCounters. Zero fields mean defaults.
type CountersOptions struct {
	Iters    int                // increments per measurement and thread; default 50M
	Reps     int                // alternating rounds; default 5
	Topology *topology.Topology // nil = the live machine
	Progress func(name string, rep, reps int)
}

// sinks keep the compiler from deleting the loops; each is written once per
// measurement, after the loop.
type sinks struct {
	u32 uint32
	u64 uint64
}

//go:noinline
func incNoInline(p *uint64) { *p++ }

// paddedAtomic is one shard of a sharded atomic counter, alone on its line.
type paddedAtomic struct {
	v atomic.Uint64
	_ [56]byte
}

// RunCounters reproduces the counter(9) thread's cost table on this machine:
// ns per increment for the ways a statistics counter can be kept, measured
// alternately and reported as medians. Rows with Threads > 1 run one loop per
// worker at once, as the per-CPU counters of a busy machine do.
func RunCounters(ctx context.Context, o CountersOptions) ([]CounterRow, error) {
	if o.Iters <= 0 {
		o.Iters = 50_000_000
	}
	if o.Reps <= 0 {
		o.Reps = 5
	}
	rt, err := runtime.New(runtime.Config{Topology: o.Topology})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	nw := rt.Workers()
	n := o.Iters
	var sk sinks
	var mu sync.Mutex

	// onAll runs body on every worker at once and returns ns per op.
	onAll := func(body func(c *runtime.Ctx)) (float64, error) {
		var ns float64
		err := rt.Go(ctx, func(c *runtime.Ctx) error {
			ns = timeIt(func() {
				g := c.Group()
				for range nw - 1 {
					c.Go(g, func(c *runtime.Ctx) error { body(c); return nil })
				}
				body(c)
				c.Wait(g)
			})
			return nil
		}).Wait()
		return ns / float64(n), err
	}
	// onOne runs body on one worker and returns ns per op.
	onOne := func(body func(c *runtime.Ctx)) (float64, error) {
		var ns float64
		err := rt.Go(ctx, func(c *runtime.Ctx) error { ns = timeIt(func() { body(c) }); return nil }).Wait()
		return ns / float64(n), err
	}
	plain := make([]sinks, 1) // heap memory the plain loops increment
	perWorker := rt.NewCounter()
	shards := make([]paddedAtomic, nw)
	var shared atomic.Uint64
	var uncontended atomic.Uint64

	type row struct {
		name    string
		threads int
		run     func() (float64, error)
		ns      []float64
	}
	rows := []*row{
		{name: "empty loop", threads: 1, run: func() (float64, error) {
			return onOne(func(*runtime.Ctx) {
				var i int
				for i = 0; i < n; i++ {
				}
				mu.Lock()
				sk.u64 += uint64(i)
				mu.Unlock()
			})
		}},
		// The plain counters live in memory (a heap object), as a
		// statistics counter does: "counter++" is a load, an add and a
		// store each time, not a register the compiler keeps in the loop.
		{name: "plain uint32", threads: 1, run: func() (float64, error) {
			return onOne(func(*runtime.Ctx) {
				p := &plain[0].u32
				for range n {
					*p++
				}
			})
		}},
		{name: "plain uint64", threads: 1, run: func() (float64, error) {
			return onOne(func(*runtime.Ctx) {
				p := &plain[0].u64
				for range n {
					*p++
				}
			})
		}},
		{name: "non-inlined uint64", threads: 1, run: func() (float64, error) {
			return onOne(func(*runtime.Ctx) {
				p := &plain[0].u64
				for range n {
					incNoInline(p)
				}
			})
		}},
		{name: "atomic.AddUint64 uncontended", threads: 1, run: func() (float64, error) {
			return onOne(func(*runtime.Ctx) {
				for range n {
					uncontended.Add(1)
				}
			})
		}},
		// numasteal's per-worker counter as a task uses it in a loop:
		// the worker's slot is looked up once (Counter.Local), then each
		// increment is one add to memory.
		{name: "per-worker counter", threads: 1, run: func() (float64, error) {
			return onOne(func(c *runtime.Ctx) {
				l := perWorker.Local(c)
				for range n {
					l.Inc()
				}
			})
		}},
		// The same through Counter.Inc(ctx), which finds the slot each time.
		{name: "per-worker counter, Inc(ctx)", threads: 1, run: func() (float64, error) {
			return onOne(func(c *runtime.Ctx) {
				for range n {
					perWorker.Inc(c)
				}
			})
		}},
		{name: "per-worker counter, all workers", threads: nw, run: func() (float64, error) {
			return onAll(func(c *runtime.Ctx) {
				l := perWorker.Local(c)
				for range n {
					l.Inc()
				}
			})
		}},
		{name: "sharded atomic, all workers", threads: nw, run: func() (float64, error) {
			return onAll(func(c *runtime.Ctx) {
				s := &shards[c.Worker()].v
				for range n {
					s.Add(1)
				}
			})
		}},
		{name: "one shared atomic, all workers", threads: nw, run: func() (float64, error) {
			return onAll(func(c *runtime.Ctx) {
				for range n {
					shared.Add(1)
				}
			})
		}},
	}
	for rep := range o.Reps {
		for _, r := range rows {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if o.Progress != nil {
				o.Progress(r.name, rep+1, o.Reps)
			}
			ns, err := r.run()
			if err != nil {
				return nil, err
			}
			r.ns = append(r.ns, ns)
		}
	}
	mu.Lock()
	sk.u64 += plain[0].u64 + uint64(plain[0].u32) // keep the stores observable
	mu.Unlock()
	out := make([]CounterRow, len(rows))
	for i, r := range rows {
		out[i] = CounterRow{Name: r.name, NsPerOp: median(r.ns), Threads: r.threads}
	}
	return out, nil
}
