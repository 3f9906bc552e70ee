package affinity

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/topology/cpuset"
)

func TestSetProcessAffinity(t *testing.T) {
	all := allowed(t)
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	pid := cmd.Process.Pid
	for cpu := range all.All() {
		want := cpuset.Of(cpu)
		if err := SetProcessAffinity(pid, want); err != nil {
			t.Fatal(err)
		}
		got, err := ProcessAffinity(pid)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(want) {
			t.Errorf("ProcessAffinity(%d) = %s, want %s", pid, got, want)
		}
		if status := procStatusList(t, strconv.Itoa(pid), "Cpus_allowed_list"); status != want.String() {
			t.Errorf("/proc/%d/status Cpus_allowed_list = %s, want %s", pid, status, want)
		}
	}
}

// TestSetProcessAffinityThreads sets the mask of this test process, which
// has several threads, and checks that every thread got it.
func TestSetProcessAffinityThreads(t *testing.T) {
	all := allowed(t)
	pid := os.Getpid()
	t.Cleanup(func() {
		if err := SetProcessAffinity(pid, all); err != nil {
			t.Error(err)
		}
	})
	want := cpuset.Of(all.Last())
	if err := SetProcessAffinity(pid, want); err != nil {
		t.Fatal(err)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) < 2 {
		t.Fatalf("the test process has %d threads; want several", len(tasks))
	}
	for _, task := range tasks {
		if got := procStatusList(t, "self/task/"+task.Name(), "Cpus_allowed_list"); got != want.String() {
			t.Errorf("thread %s: Cpus_allowed_list = %s, want %s", task.Name(), got, want)
		}
	}
}

func TestProcessAffinityRefused(t *testing.T) {
	// PID_MAX_LIMIT is 4194304 (2^22), so this pid never exists.
	const nopid = 1<<22 + 1
	tests := []struct {
		name    string
		pid     int
		set     cpuset.Set
		wantErr error
		wantMsg string
	}{
		{"no such process", nopid, cpuset.Of(0), unix.ESRCH,
			"affinity: sched_setaffinity of pid 4194305 to CPUs 0: no such process"},
		{"pid 0", 0, cpuset.Of(0), unix.EINVAL,
			"affinity: sched_setaffinity to CPUs 0: pid 0 is not a process id: invalid argument"},
		{"empty", os.Getpid(), cpuset.Set{}, ErrEmptySet,
			"affinity: sched_setaffinity of pid " + strconv.Itoa(os.Getpid()) + " to no CPUs: empty set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := SetProcessAffinity(tt.pid, tt.set)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tt.wantErr) {
				t.Fatalf("SetProcessAffinity(%d, %s) = %v, want *Error wrapping %v", tt.pid, tt.set, err, tt.wantErr)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("message %q, want %q", err, tt.wantMsg)
			}
		})
	}
	if _, err := ProcessAffinity(nopid); !errors.Is(err, unix.ESRCH) {
		t.Errorf("ProcessAffinity(%d) = %v, want ESRCH", nopid, err)
	}
}

// TestSetProcessAffinityEPERM needs an unprivileged user: only then does the
// kernel refuse to change another user's process.
func TestSetProcessAffinityEPERM(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root, which may change any process's affinity: EPERM cannot happen")
	}
	err := SetProcessAffinity(1, cpuset.Of(0))
	if !errors.Is(err, unix.EPERM) {
		t.Fatalf("SetProcessAffinity(1) as uid %d = %v, want EPERM", os.Geteuid(), err)
	}
	if want := "affinity: sched_setaffinity of pid 1 to CPUs 0: operation not permitted"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
}
