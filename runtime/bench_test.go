package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// The fork-join benchmarks of the runtime issue, in benchstat format:
//
//	go test -run '^$' -bench . -count 5 ./runtime/ | tee new.txt
//	benchstat old.txt new.txt
//
// The fib benchmarks compute fib(benchFibN) per op with a task (or a
// goroutine) per call; BenchmarkFibSerial is the baseline they are divided
// by. numasteal bench forkjoin measures the same contenders alternating run
// by run, which is fairer on a noisy machine.

// benchFibN is the fib argument of the fib benchmarks: 121,392 calls with
// n >= 2, each a spawn+join.
const benchFibN = 25

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

func BenchmarkFibSerial(b *testing.B) {
	b.ReportAllocs()
	want := fibSerial(benchFibN)
	for b.Loop() {
		if fibSerial(benchFibN) != want {
			b.Fatal("wrong fib")
		}
	}
}

func benchFibJobs(b *testing.B, workers int) {
	b.ReportAllocs()
	rt := benchRuntime(b, workers)
	fib := newFibJobs(rt)
	want := fibSerial(benchFibN)
	ctx := context.Background()
	for b.Loop() {
		got, err := fib.Run(ctx, benchFibN)
		if err != nil || got != want {
			b.Fatalf("fib(%d) = %d, %v; want %d", benchFibN, got, err, want)
		}
	}
}

// BenchmarkFibJobs1W is the cost of a task per call on one worker: the
// overhead of Join with nobody to steal, against BenchmarkFibSerial.
func BenchmarkFibJobs1W(b *testing.B) { benchFibJobs(b, 1) }

// BenchmarkFibJobsAll runs the same on one worker per usable CPU.
func BenchmarkFibJobsAll(b *testing.B) { benchFibJobs(b, 0) }

// BenchmarkFibJoinClosures is fib with Ctx.Join and closures on every
// worker: simpler to write than Jobs, at a few allocations per call.
func BenchmarkFibJoinClosures(b *testing.B) {
	b.ReportAllocs()
	rt := benchRuntime(b, 0)
	want := fibSerial(benchFibN)
	ctx := context.Background()
	for b.Loop() {
		var got int
		if err := rt.Go(ctx, func(c *Ctx) error { got = fibJoin(c, benchFibN); return nil }).Wait(); err != nil || got != want {
			b.Fatalf("fib(%d) = %d, %v; want %d", benchFibN, got, err, want)
		}
	}
}

func fibGoroutines(n int) int {
	if n < 2 {
		return n
	}
	var a, b int
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a = fibGoroutines(n - 1) }()
	go func() { defer wg.Done(); b = fibGoroutines(n - 2) }()
	wg.Wait()
	return a + b
}

// BenchmarkFibGoroutines is fib with a goroutine per call and a
// sync.WaitGroup: what a task per call costs without a runtime.
func BenchmarkFibGoroutines(b *testing.B) {
	b.ReportAllocs()
	want := fibSerial(benchFibN)
	for b.Loop() {
		if fibGoroutines(benchFibN) != want {
			b.Fatal("wrong fib")
		}
	}
}

func fibErrgroup(n int) (int, error) {
	if n < 2 {
		return n, nil
	}
	var a, b int
	var g errgroup.Group
	g.Go(func() (err error) { a, err = fibErrgroup(n - 1); return err })
	g.Go(func() (err error) { b, err = fibErrgroup(n - 2); return err })
	err := g.Wait()
	return a + b, err
}

// BenchmarkFibErrgroup is fib with an errgroup.Group per call.
func BenchmarkFibErrgroup(b *testing.B) {
	b.ReportAllocs()
	want := fibSerial(benchFibN)
	for b.Loop() {
		if got, err := fibErrgroup(benchFibN); err != nil || got != want {
			b.Fatalf("fib = %d, %v", got, err)
		}
	}
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
// a one-worker runtime: push, run a, pop b back, run b. The issue's
// spawn_join_ns.
func BenchmarkSpawnJoin(b *testing.B) { benchSpawnJoin(b, 1) }

// BenchmarkSpawnJoinAll is the same with every worker running, so idle
// workers may steal b and the joiner may have to wait for a thief.
func BenchmarkSpawnJoinAll(b *testing.B) { benchSpawnJoin(b, 0) }

// BenchmarkGroupGoWait is a task's Group, one Go of an empty function and
// its Wait: the errgroup-style fork-join, one group allocation per op.
func BenchmarkGroupGoWait(b *testing.B) {
	b.ReportAllocs()
	rt := benchRuntime(b, 1)
	inTask(b, rt, func(c *Ctx) error {
		b.ResetTimer()
		for range b.N {
			g := c.Group()
			g.Go(benchNop)
			if err := g.Wait(); err != nil {
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
// of the task, the inject_latency_ns (here a mean, not a median).
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
