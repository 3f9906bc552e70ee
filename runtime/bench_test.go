package runtime

import (
	"context"
	goruntime "runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// Micro-benchmarks of the runtime's own operations, in benchstat format:
//
//	go test -run '^$' -bench . -count 5 ./runtime/ | tee new.txt
//	benchstat old.txt new.txt
//
// The fib contenders (serial, Jobs, closures, goroutines, errgroup) are
// benchmarked in package bench, next to numasteal bench forkjoin, which
// measures the same contenders alternating run by run.

// benchRuntime starts a runtime on the live machine for a benchmark; workers
// 0 means one per usable CPU.
func benchRuntime(b *testing.B, workers int) *Runtime {
	b.Helper()
	return benchRuntimeCfg(b, Config{Workers: workers})
}

// benchRuntimeCfg is benchRuntime with a whole Config.
func benchRuntimeCfg(b *testing.B, cfg Config) *Runtime {
	b.Helper()
	rt, err := New(cfg)
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}

func benchNop(*Ctx) error { return nil }

// inTask runs body as a task on one of rt's workers, on that worker's
// thread (onWorker), and fails b if it returns an error. The benchmark
// goroutine blocks meanwhile, so body may use b's timer.
func inTask(b *testing.B, rt *Runtime, body func(c *Ctx) error) {
	b.Helper()
	if err := onWorker(rt, body); err != nil {
		b.Fatal(err)
	}
}

func benchSpawnJoin(b *testing.B, workers int) {
	b.ReportAllocs()
	rt := benchRuntime(b, workers)
	inTask(b, rt, func(c *Ctx) error {
		for range 1000 { // warm the free list and the deque
			c.Join(benchNop, benchNop)
		}
		b.ResetTimer()
		for range b.N {
			if err := c.Join(benchNop, benchNop); err != nil {
				return err
			}
		}
		b.StopTimer()
		return nil
	})
}

// BenchmarkSpawnJoin is one Ctx.Join of two empty functions inside a task on
// a one-worker runtime: push, run a, pop b back, run b: spawn_join_ns of
// `numasteal bench forkjoin`.
func BenchmarkSpawnJoin(b *testing.B) { benchSpawnJoin(b, 1) }

// BenchmarkSpawnJoinAll is the same with every worker running, so idle
// workers may steal b and the joiner may have to wait for a thief.
func BenchmarkSpawnJoinAll(b *testing.B) { benchSpawnJoin(b, 0) }

// BenchmarkGroupGoWait is a task's group (Ctx.Group), one Ctx.Go of an
// empty function and Ctx.Wait: the errgroup-style fork-join, one group
// allocation per op.
func BenchmarkGroupGoWait(b *testing.B) {
	b.ReportAllocs()
	rt := benchRuntime(b, 1)
	inTask(b, rt, func(c *Ctx) error {
		b.ResetTimer()
		for range b.N {
			g := c.Group()
			c.Go(g, benchNop)
			if err := c.Wait(g); err != nil {
				return err
			}
		}
		b.StopTimer()
		return nil
	})
}

// BenchmarkInjectLatency submits one task at a time from outside the workers
// and waits for it. ns/op is the round trip (submit, wake a worker, run,
// report, wake the waiter); start-ns/op is the part from submit to the start
// of the task, inject_latency_ns of `numasteal bench forkjoin` (here a
// mean, not a median).
func BenchmarkInjectLatency(b *testing.B) {
	b.ReportAllocs()
	rt := benchRuntime(b, 0)
	g := rt.Group(context.Background())
	var submitted time.Time
	var latency time.Duration
	task := &Task{Fn: func(*Ctx) error {
		latency += time.Since(submitted)
		return nil
	}}
	for b.Loop() {
		submitted = time.Now()
		g.Spawn(task)
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(latency.Nanoseconds())/float64(b.N), "start-ns/op")
}

// BenchmarkCounterInc is Counter.Inc from a task: the per-worker counter of
// the counter(9) seed, to compare with BenchmarkPlainUint64.
func BenchmarkCounterInc(b *testing.B) {
	b.ReportAllocs()
	rt := benchRuntime(b, 1)
	cnt := rt.NewCounter()
	inTask(b, rt, func(c *Ctx) error {
		b.ResetTimer()
		for range b.N {
			cnt.Inc(c)
		}
		b.StopTimer()
		return nil
	})
	rt.Close() // folds: the total is exact afterwards
	if got := cnt.Load(); got != uint64(b.N) {
		b.Fatalf("counter = %d after %d increments", got, b.N)
	}
}

// BenchmarkPlainUint64 is a plain uint64 increment in memory, the floor the
// per-worker counter is measured against.
func BenchmarkPlainUint64(b *testing.B) {
	b.ReportAllocs()
	n := new(uint64)
	for range b.N {
		*n++
	}
	if *n != uint64(b.N) {
		b.Fatalf("plain counter = %d after %d increments", *n, b.N)
	}
}

// BenchmarkAtomicAdd is an uncontended atomic add (a lock-prefixed
// instruction on x86).
func BenchmarkAtomicAdd(b *testing.B) {
	b.ReportAllocs()
	var n atomic.Uint64
	for range b.N {
		n.Add(1)
	}
	if n.Load() != uint64(b.N) {
		b.Fatalf("atomic counter = %d after %d increments", n.Load(), b.N)
	}
}

// BenchmarkPeriodicBalancing is a ParallelFor of 4096 small iterations
// (burn(100), about 250 ns) on every worker with periodic balancing at its
// default tick and turned off (Config.BalanceTick -1): what the busy pass
// and the coarse clock cost a fork-join loop. -count N runs each
// sub-benchmark N times in a row; to alternate them, run
// -bench 'PeriodicBalancing/tick=default' and '…/tick=off' in turn.
func BenchmarkPeriodicBalancing(b *testing.B) {
	for _, bc := range []struct {
		name string
		tick time.Duration
	}{{"tick=default", 0}, {"tick=off", -1}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			rt, err := New(Config{BalanceTick: bc.tick})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			var sink atomic.Int64
			for b.Loop() {
				err := parallelFor(rt, context.Background(), 0, 4096, 1, func(c *Ctx, lo, hi int) error {
					sink.Add(int64(burn(100 * (hi - lo))))
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			rt.Close()
			s := rt.Stats()
			b.ReportMetric(float64(s.Total.PulledTasks)/float64(b.N), "pulled/op")
		})
	}
}

// BenchmarkClockRead is one read of the clock the workers use
// (time.Since from the runtime's start): why a task's stamp is taken from
// the coarse per-worker clock instead (periodic.go).
func BenchmarkClockRead(b *testing.B) {
	start := time.Now()
	var sink int64
	for b.Loop() {
		sink += int64(time.Since(start))
	}
	if sink < 0 {
		b.Fatal("clock ran backwards")
	}
}

// BenchmarkOutsideGroup4 is the shape an embedder that serves requests
// submits: a group of 4 empty tasks injected from a goroutine that is not
// a worker, and Group.Wait. Compare with BenchmarkErrgroup4.
func BenchmarkOutsideGroup4(b *testing.B) {
	b.ReportAllocs()
	rt := benchRuntime(b, 0)
	for b.Loop() {
		g := rt.Group(context.Background())
		for range 4 {
			g.Go(benchNop)
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkErrgroup4 is BenchmarkOutsideGroup4's shape on
// golang.org/x/sync/errgroup, limited to one goroutine per CPU.
func BenchmarkErrgroup4(b *testing.B) {
	b.ReportAllocs()
	nop := func() error { return nil }
	for b.Loop() {
		var g errgroup.Group
		g.SetLimit(goruntime.NumCPU())
		for range 4 {
			g.Go(nop)
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

// outsideGroupOf4 is one round trip of BenchmarkOutsideGroup4's shape.
func outsideGroupOf4(rt *Runtime) error {
	g := rt.Group(context.Background())
	for range 4 {
		g.Go(benchNop)
	}
	return g.Wait()
}

// errgroupOf4 is one round trip of BenchmarkErrgroup4's shape.
func errgroupOf4() error {
	nop := func() error { return nil }
	var g errgroup.Group
	g.SetLimit(goruntime.NumCPU())
	for range 4 {
		g.Go(nop)
	}
	return g.Wait()
}

// alternated runs the contenders in blocks of block operations, A's block,
// then B's, and so on, for n operations of each, timing every operation,
// and reports each contender's median as a metric (unit name-ns/op) and
// the ratio of the first median to the second's (ratio). A noisy machine
// then slows both alike instead of whichever -count run it hits.
func alternated(b *testing.B, block int, names [2]string, ops [2]func() error) {
	var times [2][]time.Duration
	for b.Loop() {
		for k := range 2 {
			for range block {
				start := time.Now()
				if err := ops[k](); err != nil {
					b.Fatal(err)
				}
				times[k] = append(times[k], time.Since(start))
			}
		}
	}
	var med [2]float64
	for k := range 2 {
		slices.Sort(times[k])
		med[k] = float64(times[k][len(times[k])/2].Nanoseconds())
		b.ReportMetric(med[k], names[k]+"-ns/op")
	}
	b.ReportMetric(med[0]/med[1], "ratio")
}

// BenchmarkOutsideVsErrgroup4 alternates BenchmarkOutsideGroup4's round
// trip and BenchmarkErrgroup4's in blocks of 64 and reports the median of
// each (outside-ns/op, errgroup-ns/op) and their ratio; one op is a block
// of each.
func BenchmarkOutsideVsErrgroup4(b *testing.B) {
	rt := benchRuntime(b, 0)
	alternated(b, 64, [2]string{"outside", "errgroup"}, [2]func() error{
		func() error { return outsideGroupOf4(rt) },
		errgroupOf4,
	})
}

// manyTasks is the number of one-task submissions into one group of
// BenchmarkOutsideVsErrgroupMany.
const manyTasks = 1 << 20

// BenchmarkOutsideVsErrgroupMany submits manyTasks (1M) empty tasks one
// Go at a time into one group from a goroutine that is not a worker and
// waits for the group, alternating with the same on errgroup limited to
// one goroutine per CPU. It reports each contender's median cost per task
// (outside-ns/task, errgroup-ns/task) and their ratio; one op is one run
// of each. Run it with -benchtime Nx: a run takes about a second.
func BenchmarkOutsideVsErrgroupMany(b *testing.B) {
	rt := benchRuntime(b, 0)
	nop := func() error { return nil }
	var times [2][]time.Duration
	for b.Loop() {
		start := time.Now()
		g := rt.Group(context.Background())
		for range manyTasks {
			g.Go(benchNop)
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		times[0] = append(times[0], time.Since(start))

		start = time.Now()
		var eg errgroup.Group
		eg.SetLimit(goruntime.NumCPU())
		for range manyTasks {
			eg.Go(nop)
		}
		if err := eg.Wait(); err != nil {
			b.Fatal(err)
		}
		times[1] = append(times[1], time.Since(start))
	}
	var med [2]float64
	for k, name := range []string{"outside", "errgroup"} {
		slices.Sort(times[k])
		med[k] = float64(times[k][len(times[k])/2].Nanoseconds()) / manyTasks
		b.ReportMetric(med[k], name+"-ns/task")
	}
	b.ReportMetric(med[0]/med[1], "ratio")
}

// BenchmarkGroupContextLive counts the live heap objects after 10k and
// after 100k groups that asked for their Context under one cancelable
// parent (waited from outside), past a warm-up, and reports both and their
// ratio: a group's context must be let go when Wait returns, so the count
// stays flat. One iteration runs 150k groups; run it with -benchtime 1x.
func BenchmarkGroupContextLive(b *testing.B) {
	rt := newTestRuntime(b, Config{})
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	groups := func(n int) {
		for range n {
			g := rt.Group(parent)
			g.Go(func(c *Ctx) error { _ = c.Context(); return nil })
			_ = g.Context()
			if err := g.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	}
	var at10k, at100k int64
	for range b.N {
		// Warm up: free lists, pools and the workers' structures grow over
		// the first few tens of thousands of groups.
		groups(50000)
		groups(10000)
		at10k = settledObjects()
		groups(90000)
		at100k = settledObjects()
	}
	b.ReportMetric(float64(at10k), "objects@10k")
	b.ReportMetric(float64(at100k), "objects@100k")
	b.ReportMetric(float64(at100k)/float64(at10k), "100k/10k")
}

// settledObjects returns the fewest live heap objects of five counts: what
// the runtime holds, without what a worker that is just parking or a timer
// holds for a moment.
func settledObjects() int64 {
	n := liveObjects()
	for range 4 {
		n = min(n, liveObjects())
	}
	return n
}
