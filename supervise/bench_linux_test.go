//go:build linux

package supervise

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// The cost of a fork: plain cmd.Start from whatever thread the goroutine
// is on, against the hand-off to a kept thread (and placed variants).
// Each iteration starts and waits for /bin/true, so the numbers include
// the exec and the exit; the difference is what the kept thread costs.

func benchStart(b *testing.B, start func(c *exec.Cmd) error) {
	b.ReportAllocs()
	for b.Loop() {
		c := exec.Command("/bin/true")
		if err := start(c); err != nil {
			b.Fatal(err)
		}
		if err := c.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStartPlain(b *testing.B) {
	benchStart(b, (*exec.Cmd).Start)
}

func BenchmarkStartKeptThread(b *testing.B) {
	f := newForker(1, zap.NewNop(), nil)
	defer f.close()
	benchStart(b, func(c *exec.Cmd) error { _, err := f.start(c, nil); return err })
}

// placement0 is CPU 0 of this process's CPUs.
func placement0(b *testing.B) affinity.Placement {
	set, err := affinity.Allowed()
	if err != nil || set.IsEmpty() {
		b.Skip("no affinity")
	}
	return affinity.Placement{CPUs: cpuset.Of(set.Last())}
}

func BenchmarkStartPlacedAffinity(b *testing.B) {
	p := placement0(b)
	benchStart(b, func(c *exec.Cmd) error { return affinity.StartPlaced(c, p) })
}

func BenchmarkStartPlacedKeptThread(b *testing.B) {
	p := placement0(b)
	f := newForker(1, zap.NewNop(), nil)
	defer f.close()
	benchStart(b, func(c *exec.Cmd) error { _, err := f.start(c, &p); return err })
}

// BenchmarkTask is a whole task of /bin/true: marker, process group,
// kept-thread fork, the end (a read of cgroup.events, or without a
// cgroup a look at this process's orphans), the reap pass.
func BenchmarkTask(b *testing.B) {
	for _, noCg := range []bool{false, true} {
		name := "cgroup"
		if noCg {
			name = "nocgroup"
		}
		b.Run(name, func(b *testing.B) {
			s, err := New(Options{NoCgroup: noCg, Subreaper: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if !noCg && s.Mechanisms().Cgroup == "" {
				b.Skip("no cgroup")
			}
			b.ReportAllocs()
			for b.Loop() {
				t, err := s.Start(context.Background(), exec.Command("/bin/true"))
				if err != nil {
					b.Fatal(err)
				}
				if err := t.Wait(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReapPass is the reaper's work per SIGCHLD with nothing to
// reap: list this process's children (every thread's children file) and
// look each up.
func BenchmarkReapPass(b *testing.B) {
	s, err := New(Options{NoCgroup: true, Subreaper: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		s.reapPass()
	}
}

// BenchmarkSweep is one scan of /proc for a task's processes (each poll
// while a task ends; the watchdog's too), on this machine's process count.
func BenchmarkSweep(b *testing.B) {
	s, err := New(Options{NoCgroup: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t, err := s.Start(context.Background(), exec.Command("sleep", "1000"))
	if err != nil {
		b.Fatal(err)
	}
	defer t.Kill()
	b.ReportAllocs()
	for b.Loop() {
		s.sweep(t)
	}
}

// BenchmarkThreadMove: what StartHere adds to a fork in the tasks' v1
// memory cgroup, the calling thread's move in and back out (two writes
// to tasks files). Skipped where no v1 tasks' cgroup can be made.
func BenchmarkThreadMove(b *testing.B) {
	m, err := makeTaskMemory(fmt.Sprintf("bench-%d", os.Getpid()), 1<<30, nil)
	if err != nil || !m.threadsMove() {
		b.Skipf("SKIP: no v1 tasks' memory cgroup here: %v", err)
	}
	defer m.remove()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if unix.Gettid() == unix.Getpid() {
		b.Skip("SKIP: the benchmark runs on the main thread, which never enters")
	}
	for b.Loop() {
		if err := m.enterThread(); err != nil {
			b.Fatal(err)
		}
		if err := m.leaveThread(); err != nil {
			b.Fatal(err)
		}
	}
}
