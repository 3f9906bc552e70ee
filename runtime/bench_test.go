package runtime

import (
	"context"
	goruntime "runtime"
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
	rt, err := New(Config{Workers: workers})
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}

func benchNop(*Ctx) error { return nil }

// inTask runs body as a task on rt and fails b if it returns an error. The
// benchmark goroutine blocks meanwhile, so body may use b's timer.
func inTask(b *testing.B, rt *Runtime, body func(c *Ctx) error) {
	b.Helper()
	if err := rt.Go(context.Background(), body).Wait(); err != nil {
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
