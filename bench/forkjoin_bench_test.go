package bench

import (
	"context"
	"testing"

	"github.com/numasteal/numasteal/runtime"
)

// The contenders of numasteal bench forkjoin as go test benchmarks, in
// benchstat format:
//
//	go test -run '^$' -bench Fib -count 5 ./bench/ | tee new.txt
//
// Each op computes fib(benchFibN) with a task (or goroutine) per call;
// BenchmarkFibSerial is the baseline. The CLI alternates the contenders run
// by run, which is fairer on a noisy machine.

// benchFibN gives 121,392 calls with n >= 2, each a spawn+join.
const benchFibN = 25

func benchRuntime(b *testing.B, workers int) *runtime.Runtime {
	b.Helper()
	rt, err := runtime.New(runtime.Config{Workers: workers})
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}

// benchFib runs fib per op and checks its answer.
func benchFib(b *testing.B, fib func() (int, error)) {
	b.ReportAllocs()
	want := fibSerial(benchFibN)
	for b.Loop() {
		if got, err := fib(); err != nil || got != want {
			b.Fatalf("fib(%d) = %d, %v; want %d", benchFibN, got, err, want)
		}
	}
}

func BenchmarkFibSerial(b *testing.B) {
	benchFib(b, func() (int, error) { return fibSerial(benchFibN), nil })
}

func benchFibJobs(b *testing.B, workers int) {
	fib := FibJobs(benchRuntime(b, workers))
	benchFib(b, func() (int, error) { return fib.Run(context.Background(), benchFibN) })
}

// BenchmarkFibJobs1W is a task per call on one worker: Join's overhead with
// nobody to steal, against BenchmarkFibSerial.
func BenchmarkFibJobs1W(b *testing.B) { benchFibJobs(b, 1) }

// BenchmarkFibJobsAll is the same on one worker per usable CPU.
func BenchmarkFibJobsAll(b *testing.B) { benchFibJobs(b, 0) }

// BenchmarkFibJoinClosures is Ctx.Join with closures on every worker:
// simpler than Jobs, at two small allocations per call.
func BenchmarkFibJoinClosures(b *testing.B) {
	rt := benchRuntime(b, 0)
	benchFib(b, func() (int, error) {
		var got int
		err := rt.Go(context.Background(), func(c *runtime.Ctx) error { got = FibJoin(c, benchFibN); return nil }).Wait()
		return got, err
	})
}

// BenchmarkFibGoroutines is a goroutine per call with a sync.WaitGroup.
func BenchmarkFibGoroutines(b *testing.B) {
	benchFib(b, func() (int, error) { return fibGoroutinesCutoff(benchFibN, 2), nil })
}

// BenchmarkFibErrgroup is an errgroup.Group per call.
func BenchmarkFibErrgroup(b *testing.B) {
	benchFib(b, func() (int, error) { return fibErrgroupCutoff(benchFibN, 2) })
}
