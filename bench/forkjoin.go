package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/numasteal/numasteal/examples/forkjoin/msort"
	"github.com/numasteal/numasteal/examples/treesum/btree"
	"github.com/numasteal/numasteal/runtime"
	"github.com/numasteal/numasteal/topology"
)

// ForkJoinOptions configure RunForkJoin. Zero fields mean defaults.
type ForkJoinOptions struct {
	N    int // fib(N); default 30
	Reps int // alternating rounds; default 7
	// TreeN and SortN size the tree sum and the merge sort: by default
	// 10M, or 2^N for a quick run with N < 23; negative skips them.
	TreeN    int
	SortN    int
	Topology *topology.Topology // nil = the live machine
	// Progress, when set, is called before each measurement.
	Progress func(contender string, rep, reps int)
}

// ForkJoinResult holds the medians, in nanoseconds. The JSON names are
// the ones the fork-join targets are written in (docs/BENCHMARKS.md), so
// keep them stable. The serial baselines run as tasks of the one-worker
// runtime, on its pinned thread (onWorker).
type ForkJoinResult struct {
	FibN            int     `json:"fib_n"`
	Workers         int     `json:"workers"`
	Reps            int     `json:"reps"`
	SerialNs        float64 `json:"serial_ns"`
	Runtime1WNs     float64 `json:"runtime_1w_ns"`
	RuntimeAllNs    float64 `json:"runtime_all_ns"`
	GoroutinesNs    float64 `json:"goroutines_ns"`
	ErrgroupNs      float64 `json:"errgroup_ns"`
	SpawnJoinNs     float64 `json:"spawn_join_ns"`
	InjectLatencyNs float64 `json:"inject_latency_ns"`
	// The same fib written with Ctx.Join and closures (two small
	// allocations per call) instead of Jobs (none).
	Runtime1WClosuresNs  float64 `json:"runtime_1w_closures_ns"`
	RuntimeAllClosuresNs float64 `json:"runtime_all_closures_ns"`
	// A balanced binary tree of TreeN nodes summed with a Jobs fork per
	// node (examples/treesum), against the serial recursion.
	TreeN           int     `json:"tree_n"`
	TreeSumSerialNs float64 `json:"tree_sum_serial_ns"`
	TreeSum1WNs     float64 `json:"tree_sum_1w_ns"`
	TreeSumAllNs    float64 `json:"tree_sum_all_ns"`
	// SortN random ints merge-sorted with Ctx.Join (examples/forkjoin),
	// against slices.Sort.
	SortN        int     `json:"sort_n"`
	SortSerialNs float64 `json:"sort_serial_ns"`
	Sort1WNs     float64 `json:"sort_1w_ns"`
	SortAllNs    float64 `json:"sort_all_ns"`
}

// RunForkJoin measures fib(N) with a task per call through every
// contender, alternating them run by run, plus the cost of one local
// spawn+join and the submit-to-start latency of an injected task.
func RunForkJoin(ctx context.Context, o ForkJoinOptions) (ForkJoinResult, error) {
	if o.N <= 0 {
		o.N = 30
	}
	if o.Reps <= 0 {
		o.Reps = 7
	}
	kernelN := 10_000_000
	if o.N < 23 {
		kernelN = 1 << o.N
	}
	if o.TreeN == 0 {
		o.TreeN = kernelN
	}
	if o.SortN == 0 {
		o.SortN = kernelN
	}
	one, err := runtime.New(runtime.Config{Topology: o.Topology, Workers: 1})
	if err != nil {
		return ForkJoinResult{}, err
	}
	defer one.Close()
	all, err := runtime.New(runtime.Config{Topology: o.Topology})
	if err != nil {
		return ForkJoinResult{}, err
	}
	defer all.Close()

	want := fibSerial(o.N)
	check := func(name string, got int) error {
		if got != want {
			return fmt.Errorf("bench: %s computed fib(%d) = %d, want %d", name, o.N, got, want)
		}
		return nil
	}
	type contender struct {
		name string
		run  func() (int, error)
		// timed, when set, measures one run itself (excluding its setup)
		// and checks its answer; run is then unused.
		timed func() (float64, error)
		ns    []float64
	}
	onRuntime := func(rt *runtime.Runtime) func() (int, error) {
		fib := FibJobs(rt)
		return func() (int, error) { return fib.Run(ctx, o.N) }
	}
	withClosures := func(rt *runtime.Runtime) func() (int, error) {
		return func() (int, error) {
			var r int
			err := rt.Go(ctx, func(c *runtime.Ctx) error { r = FibJoin(c, o.N); return nil }).Wait()
			return r, err
		}
	}
	cs := []*contender{
		{name: "serial", timed: func() (float64, error) {
			var got int
			ns, err := onWorker(ctx, one, func() { got = fibSerial(o.N) })
			if err == nil {
				err = check("serial", got)
			}
			return ns, err
		}},
		{name: "runtime_1w", run: onRuntime(one)},
		{name: "runtime_all", run: onRuntime(all)},
		{name: "goroutines", run: func() (int, error) { return fibGoroutinesCutoff(o.N, 2), nil }},
		{name: "errgroup", run: func() (int, error) { return fibErrgroupCutoff(o.N, 2) }},
		{name: "spawn_join", run: func() (int, error) { return want, nil }},
		{name: "runtime_1w_closures", run: withClosures(one)},
		{name: "runtime_all_closures", run: withClosures(all)},
		{name: "inject_latency", run: func() (int, error) { return want, nil }},
	}
	extra := forkJoinKernels(ctx, o, one, all)
	for _, k := range extra {
		cs = append(cs, &contender{name: k.name, timed: k.timed})
	}
	const joins = 1 << 20
	for rep := range o.Reps {
		for _, c := range cs {
			if err := ctx.Err(); err != nil {
				return ForkJoinResult{}, err
			}
			if o.Progress != nil {
				o.Progress(c.name, rep+1, o.Reps)
			}
			switch {
			case c.timed != nil:
				ns, err := c.timed()
				if err != nil {
					return ForkJoinResult{}, err
				}
				c.ns = append(c.ns, ns)
			case c.name == "spawn_join":
				ns, err := spawnJoinNs(ctx, one, joins)
				if err != nil {
					return ForkJoinResult{}, err
				}
				c.ns = append(c.ns, ns)
			case c.name == "inject_latency":
				ns, err := injectLatencyNs(ctx, all, 200)
				if err != nil {
					return ForkJoinResult{}, err
				}
				c.ns = append(c.ns, ns)
			default:
				var got int
				var err error
				ns := timeIt(func() { got, err = c.run() })
				if err != nil {
					return ForkJoinResult{}, err
				}
				if err := check(c.name, got); err != nil {
					return ForkJoinResult{}, err
				}
				c.ns = append(c.ns, ns)
			}
		}
	}
	m := func(i int) float64 { return median(cs[i].ns) }
	byName := func(name string) float64 {
		for _, c := range cs {
			if c.name == name {
				return median(c.ns)
			}
		}
		return 0
	}
	r := ForkJoinResult{
		FibN: o.N, Workers: all.Workers(), Reps: o.Reps,
		SerialNs: m(0), Runtime1WNs: m(1), RuntimeAllNs: m(2), GoroutinesNs: m(3),
		ErrgroupNs: m(4), SpawnJoinNs: m(5), InjectLatencyNs: m(8),
		Runtime1WClosuresNs: m(6), RuntimeAllClosuresNs: m(7),
	}
	if o.TreeN > 0 {
		r.TreeN = o.TreeN
		r.TreeSumSerialNs, r.TreeSum1WNs, r.TreeSumAllNs = byName("tree_sum_serial"), byName("tree_sum_1w"), byName("tree_sum_all")
	}
	if o.SortN > 0 {
		r.SortN = o.SortN
		r.SortSerialNs, r.Sort1WNs, r.SortAllNs = byName("sort_serial"), byName("sort_1w"), byName("sort_all")
	}
	return r, nil
}

func fibSerial(n int) int {
	if n < 2 {
		return n
	}
	return fibSerial(n-1) + fibSerial(n-2)
}

// FibJobs returns fib as a runtime.Jobs: a task per call, no allocation.
func FibJobs(rt *runtime.Runtime) *runtime.Jobs[int, int] {
	var fib *runtime.Jobs[int, int]
	fib = runtime.NewJobs(rt, func(c *runtime.Ctx, n int) (int, error) {
		if n < 2 {
			return n, nil
		}
		a, b, err := fib.Join(c, n-1, n-2)
		return a + b, err
	})
	return fib
}

// FibJoin computes fib(n) with a task per call through Ctx.Join.
func FibJoin(c *runtime.Ctx, n int) int {
	if n < 2 {
		return n
	}
	var a, b int
	c.Join(
		func(c *runtime.Ctx) error { a = FibJoin(c, n-1); return nil },
		func(c *runtime.Ctx) error { b = FibJoin(c, n-2); return nil },
	)
	return a + b
}

func nop(*runtime.Ctx) error { return nil }

// spawnJoinNs is the cost of one Join of two empty functions on a worker,
// where the spawned half is taken back by its owner (the common case).
func spawnJoinNs(ctx context.Context, rt *runtime.Runtime, n int) (float64, error) {
	var ns float64
	err := rt.Go(ctx, func(c *runtime.Ctx) error {
		ns = timeIt(func() {
			for range n {
				c.Join(nop, nop)
			}
		}) / float64(n)
		return nil
	}).Wait()
	return ns, err
}

// injectLatencyNs is the median time from Group.Go outside the workers to
// the start of the task, each submitted to an idle runtime.
func injectLatencyNs(ctx context.Context, rt *runtime.Runtime, n int) (float64, error) {
	lat := make([]float64, 0, n)
	for range n {
		start := time.Now()
		var d time.Duration
		if err := rt.Go(ctx, func(*runtime.Ctx) error { d = time.Since(start); return nil }).Wait(); err != nil {
			return 0, err
		}
		lat = append(lat, float64(d.Nanoseconds()))
	}
	return median(lat), nil
}

// onWorker runs f as a task on rt and returns how long f took, measured
// in the task. The serial baselines run so, on the one-worker runtime's
// pinned thread, because on a loaded machine a pinned thread waits for
// its CPU longer than an unpinned one, which moves to whichever CPU is
// free: a baseline on an unpinned goroutine would make every runtime
// contender look slower. inTask keeps the task off a waiter's goroutine.
func onWorker(ctx context.Context, rt *runtime.Runtime, f func()) (float64, error) {
	m, err := inTask(ctx, rt, func(*runtime.Ctx) error { f(); return nil })
	return m.wall, err
}

// kernel is a contender of RunForkJoin beyond fib: timed measures one run.
type kernel struct {
	name  string
	timed func() (float64, error)
}

// forkJoinKernels returns the tree sum and merge sort contenders, each
// checking its answer: the tree sum against n(n+1)/2, the sort against
// slices.Sort of the same input.
func forkJoinKernels(ctx context.Context, o ForkJoinOptions, one, all *runtime.Runtime) []kernel {
	var ks []kernel
	if o.TreeN > 0 {
		root := btree.New(o.TreeN)
		want := int64(o.TreeN) * int64(o.TreeN+1) / 2
		sum := func(name string, f func() (int64, error)) kernel {
			return kernel{name, func() (float64, error) {
				var got int64
				var err error
				ns := timeIt(func() { got, err = f() })
				if err == nil && got != want {
					err = fmt.Errorf("bench: %s: tree sum %d, want %d", name, got, want)
				}
				return ns, err
			}}
		}
		s1, sAll := btree.NewSum(one), btree.NewSum(all)
		ks = append(ks,
			sum("tree_sum_serial", func() (int64, error) {
				var r int64
				err := one.Go(ctx, func(*runtime.Ctx) error { r = btree.SumSerial(root); return nil }).Wait()
				return r, err
			}),
			sum("tree_sum_1w", func() (int64, error) { return s1.Run(ctx, root) }),
			sum("tree_sum_all", func() (int64, error) { return sAll.Run(ctx, root) }))
	}
	if o.SortN > 0 {
		input := msort.RandomInts(o.SortN, 1)
		want := slices.Sorted(slices.Values(input))
		buf := make([]int, o.SortN)
		sorted := func(name string, f func([]int) error) kernel {
			return kernel{name, func() (float64, error) {
				copy(buf, input)
				var err error
				ns := timeIt(func() { err = f(buf) })
				if err == nil && !slices.Equal(buf, want) {
					err = fmt.Errorf("bench: %s: result differs from slices.Sort", name)
				}
				return ns, err
			}}
		}
		ks = append(ks,
			sorted("sort_serial", func(s []int) error {
				return one.Go(ctx, func(*runtime.Ctx) error { slices.Sort(s); return nil }).Wait()
			}),
			sorted("sort_1w", func(s []int) error { return msort.Sort(ctx, one, s, msort.DefaultGrain) }),
			sorted("sort_all", func(s []int) error { return msort.Sort(ctx, all, s, msort.DefaultGrain) }))
	}
	return ks
}
