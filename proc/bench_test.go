package proc

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/numasteal/numasteal/runtime"
)

// BenchmarkProcessTrue measures a whole process task for /bin/true:
// admission, placement, the fork and wait in the caller's goroutine,
// group kill and reap.
// Compare with BenchmarkExecTrue, plain os/exec.
func BenchmarkProcessTrue(b *testing.B) {
	b.ReportAllocs()
	rt := newTestRuntime(b, runtime.Config{})
	r := newTestRunner(b, rt, Config{})
	cmd := Command{Args: []string{"/bin/true"}}
	for b.Loop() {
		if res := r.Run(context.Background(), cmd); !res.Success() {
			b.Fatal(res.Err)
		}
	}
}

// BenchmarkProcessTrueParallel runs /bin/true tasks from many goroutines,
// so the slots are always full.
func BenchmarkProcessTrueParallel(b *testing.B) {
	b.ReportAllocs()
	rt := newTestRuntime(b, runtime.Config{})
	r := newTestRunner(b, rt, Config{})
	cmd := Command{Args: []string{"/bin/true"}}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if res := r.Run(context.Background(), cmd); !res.Success() {
				b.Error(res.Err)
				return
			}
		}
	})
}

// BenchmarkExecTrue is the baseline: exec.Command("/bin/true").Run().
func BenchmarkExecTrue(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := exec.Command("/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecTrueCapture is os/exec capturing output the way a process
// task does: stdout and stderr in memory, apart (a pipe and a copying
// goroutine each), and a process group of its own. The difference from
// BenchmarkExecTrue is the cost of capture; what BenchmarkProcessTrue adds
// on top of this one is the runner's (admission, the fork task, the
// group's kill and reap).
func BenchmarkExecTrueCapture(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		c := exec.Command("/bin/true")
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProcessTrueWaiting runs /bin/true tasks from N goroutines at
// once on the runner's slots (one per worker), so that N minus the slots
// wait for one, as SDET's scripts do, and reports this process's own CPU
// time per task (getrusage: its threads, not its children), which should
// not grow with the number waiting.
func BenchmarkProcessTrueWaiting(b *testing.B) {
	for _, n := range []int{2, 8, 64} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			rt := newTestRuntime(b, runtime.Config{})
			r := newTestRunner(b, rt, Config{})
			cmd := Command{Args: []string{"/bin/true"}}
			var left atomic.Int64
			left.Store(int64(b.N))
			var ru0, ru1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			b.ResetTimer()
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for left.Add(-1) >= 0 {
						if res := r.Run(context.Background(), cmd); !res.Success() {
							b.Error(res.Err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			cpu := ru1.Utime.Nano() - ru0.Utime.Nano() + ru1.Stime.Nano() - ru0.Stime.Nano()
			b.ReportMetric(float64(cpu)/float64(b.N), "self-cpu-ns/op")
		})
	}
}
