package runtime

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkProcessTrue measures a whole process task for /bin/true:
// admission, placement, fork on a worker, wait, group kill and reap.
// Compare with BenchmarkExecTrue, plain os/exec.
func BenchmarkProcessTrue(b *testing.B) {
	b.ReportAllocs()
	rt := newTestRuntime(b, Config{})
	r := newTestRunner(b, rt, ProcessConfig{})
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
	rt := newTestRuntime(b, Config{})
	r := newTestRunner(b, rt, ProcessConfig{})
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
