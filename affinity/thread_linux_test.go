package affinity

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// procStatusList returns the value of a "Key:\tvalue" line of
// /proc/PID/status (or /proc/self/status for pid "self").
func procStatusList(t *testing.T, pid, key string) string {
	t.Helper()
	v, ok := procStatusListIfAlive(pid, key)
	if !ok {
		t.Fatalf("/proc/%s/status is gone or has no %s line", pid, key)
	}
	return v
}

// procStatusListIfAlive is procStatusList for a task that may have exited
// meanwhile: ok is false when its status is gone (or has no key line).
func procStatusListIfAlive(pid, key string) (v string, ok bool) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return "", false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// allowed returns Allowed or fails the test.
func allowed(t testing.TB) cpuset.Set {
	t.Helper()
	s, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if s.IsEmpty() {
		t.Fatal("Allowed() is empty")
	}
	return s
}

func TestAllowedMatchesProcStatus(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	got := allowed(t)
	// The thread's own status file, since masks are per thread.
	tid := unix.Gettid()
	want := procStatusList(t, "self/task/"+strconv.Itoa(tid), "Cpus_allowed_list")
	if got.String() != want {
		t.Errorf("Allowed() = %s, /proc status says %s", got, want)
	}
	if got.Len() != runtime.NumCPU() {
		t.Errorf("Allowed() has %d CPUs, runtime.NumCPU() = %d", got.Len(), runtime.NumCPU())
	}
}

func TestPinEachAllowedCPU(t *testing.T) {
	all := allowed(t)
	for cpu := range all.All() {
		unlock, err := LockAndPin(cpuset.Of(cpu))
		if err != nil {
			t.Fatalf("LockAndPin(%d): %v", cpu, err)
		}
		got, node, err := CurrentCPU()
		mask := allowed(t)
		unlock()
		if err != nil {
			t.Fatal(err)
		}
		if got != cpu || node < 0 {
			t.Errorf("pinned to CPU %d: CurrentCPU() = cpu %d node %d", cpu, got, node)
		}
		if !mask.Equal(cpuset.Of(cpu)) {
			t.Errorf("pinned to CPU %d: Allowed() = %s", cpu, mask)
		}
	}
}

func TestLockAndPinRestores(t *testing.T) {
	runtime.LockOSThread() // keep the same thread across LockAndPin/unlock
	defer runtime.UnlockOSThread()
	before := allowed(t)
	unlock, err := LockAndPin(cpuset.Of(before.First()))
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	unlock() // a second call does nothing
	if after := allowed(t); !after.Equal(before) {
		t.Errorf("after unlock: Allowed() = %s, want %s", after, before)
	}
}

func TestPinThreadRefused(t *testing.T) {
	tests := []struct {
		name    string
		set     cpuset.Set
		wantErr error
		wantMsg string
	}{
		{"nonexistent CPU", cpuset.Of(4095), unix.EINVAL,
			"affinity: sched_setaffinity to CPUs 4095: invalid argument"},
		{"nonexistent range", cpuset.Range(4000, 4001), unix.EINVAL,
			"affinity: sched_setaffinity to CPUs 4000-4001: invalid argument"},
		{"empty", cpuset.Set{}, ErrEmptySet,
			"affinity: sched_setaffinity to no CPUs: empty set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			before := allowed(t)
			err := PinThread(tt.set)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tt.wantErr) {
				t.Fatalf("PinThread(%s) = %v, want *Error wrapping %v", tt.set, err, tt.wantErr)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("message %q, want %q", err, tt.wantMsg)
			}
			if after := allowed(t); !after.Equal(before) {
				t.Errorf("refused PinThread changed the mask: %s -> %s", before, after)
			}
			if unlock, err := LockAndPin(tt.set); err == nil || unlock != nil {
				t.Errorf("LockAndPin(%s) = %v, %v; want nil, error", tt.set, unlock != nil, err)
			}
		})
	}
}

// TestPinConcurrent pins many goroutines at once, each to every allowed CPU
// in turn, and checks getcpu each time; run it under -race.
func TestPinConcurrent(t *testing.T) {
	all := allowed(t).IDs()
	const goroutines, rounds = 16, 50
	var wg sync.WaitGroup
	errc := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for r := range rounds {
				cpu := all[(g+r)%len(all)]
				unlock, err := LockAndPin(cpuset.Of(cpu))
				if err != nil {
					errc <- err
					return
				}
				got, _, err := CurrentCPU()
				unlock()
				if err != nil || got != cpu {
					errc <- errors.New("pinned to CPU " + strconv.Itoa(cpu) + ", getcpu says " + strconv.Itoa(got))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	// Every thread back in the pool has its full mask again.
	if got := allowed(t); got.Len() != len(all) {
		t.Errorf("after the stress: Allowed() = %s", got)
	}
}

func BenchmarkCurrentCPU(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := CurrentCPU(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPinThread(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	all := allowed(b)
	defer PinThread(all)
	one := cpuset.Of(all.First())
	b.ReportAllocs()
	for b.Loop() {
		if err := PinThread(one); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAllowed(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Allowed(); err != nil {
			b.Fatal(err)
		}
	}
}
