package affinity

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// shellReport prints the Cpus_allowed_list of a shell, of its child and of
// its grandchild, one per line.
const shellReport = `grep Cpus_allowed_list /proc/self/status
sh -c 'grep Cpus_allowed_list /proc/self/status; sh -c "grep Cpus_allowed_list /proc/self/status"'`

func TestStartPinnedShell(t *testing.T) {
	all := allowed(t)
	sets := []cpuset.Set{all}
	for cpu := range all.All() {
		sets = append(sets, cpuset.Of(cpu))
	}
	for _, set := range sets {
		t.Run(set.String(), func(t *testing.T) {
			var out strings.Builder
			cmd := exec.Command("sh", "-c", shellReport)
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := StartPinned(cmd, set); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("%v: %s", err, out.String())
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 3 {
				t.Fatalf("want 3 lines (child, grandchild, great-grandchild), got:\n%s", out.String())
			}
			for i, line := range lines {
				if got := strings.TrimSpace(strings.TrimPrefix(line, "Cpus_allowed_list:")); got != set.String() {
					t.Errorf("generation %d: Cpus_allowed_list %q, want %s", i+1, got, set)
				}
			}
		})
	}
	// The caller's thread (whichever it is now) kept its full mask.
	if got := allowed(t); !got.Equal(all) {
		t.Errorf("after StartPinned: Allowed() = %s, want %s", got, all)
	}
}

// startReport starts this test binary as a child that prints its own
// placement (see reportPlacement) and returns that line.
func startReport(t *testing.T, start func(*exec.Cmd) error) string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	// A -race binary sleeps 1 s at exit unless told otherwise.
	cmd.Env = append(os.Environ(), childEnv+"=report", "GORACE=atexit_sleep_ms=0")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v: %s", err, out.String())
	}
	return strings.TrimSpace(out.String())
}

// TestStartPinnedGoChild checks from inside the child, with getcpu, that it
// runs where it was put.
func TestStartPinnedGoChild(t *testing.T) {
	for cpu := range allowed(t).All() {
		got := startReport(t, func(cmd *exec.Cmd) error { return StartPinned(cmd, cpuset.Of(cpu)) })
		if want := fmt.Sprintf("allowed=%d cpu=%d policy=", cpu, cpu); !strings.HasPrefix(got, want) {
			t.Errorf("child pinned to CPU %d reports %q, want %q", cpu, got, want)
		}
	}
}

func TestStartPlacedMemPolicy(t *testing.T) {
	lockForPolicy(t) // only to skip where memory policies are refused
	all := allowed(t)
	n := memNode(t)
	tests := []struct {
		mem  *MemPolicy
		want string
	}{
		{nil, "policy=default"},
		{&MemPolicy{Mode: Bind, Nodes: cpuset.Of(n)}, fmt.Sprintf("policy=bind:%d", n)},
		{&MemPolicy{Mode: Interleave, Nodes: cpuset.Of(n)}, fmt.Sprintf("policy=interleave:%d", n)},
		{&MemPolicy{Mode: Preferred, Nodes: cpuset.Of(n)}, fmt.Sprintf("policy=preferred:%d", n)},
		{&MemPolicy{Mode: Local}, "policy=local"},
	}
	for _, tt := range tests {
		got := startReport(t, func(cmd *exec.Cmd) error {
			return StartPlaced(cmd, Placement{CPUs: all, Mem: tt.mem})
		})
		if !strings.HasSuffix(got, " "+tt.want) || !strings.HasPrefix(got, "allowed="+all.String()+" ") {
			t.Errorf("child placed with %v reports %q, want allowed=%s ... %s", tt.mem, got, all, tt.want)
		}
	}
}

func TestStartPinnedRefused(t *testing.T) {
	tests := []struct {
		name    string
		p       Placement
		wantErr error
		wantMsg string
	}{
		{"empty CPU set", Placement{}, ErrEmptySet,
			"affinity: sched_setaffinity to no CPUs: empty set"},
		{"nonexistent CPU", Placement{CPUs: cpuset.Of(4095)}, unix.EINVAL,
			"affinity: sched_setaffinity to CPUs 4095: invalid argument"},
		{"bind to no nodes", Placement{CPUs: cpuset.Of(0), Mem: &MemPolicy{Mode: Bind}}, ErrEmptySet,
			"affinity: set_mempolicy bind to no nodes: empty set"},
		{"bind to a nonexistent node", Placement{CPUs: cpuset.Of(0), Mem: &MemPolicy{Mode: Bind, Nodes: cpuset.Of(1000)}}, unix.EINVAL,
			"affinity: set_mempolicy bind to nodes 1000: invalid argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.p.Mem != nil && tt.wantErr == unix.EINVAL {
				lockForPolicy(t) // skips where memory policies are refused
			}
			cmd := exec.Command("true")
			err := StartPlaced(cmd, tt.p)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("StartPlaced = %v, want an error wrapping %v", err, tt.wantErr)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("message %q, want %q", err, tt.wantMsg)
			}
			if cmd.Process != nil {
				t.Errorf("the command was started (pid %d)", cmd.Process.Pid)
				cmd.Wait()
			}
		})
	}
}

func BenchmarkStartPinned(b *testing.B) {
	set := cpuset.Of(allowed(b).First())
	b.ReportAllocs()
	for b.Loop() {
		cmd := exec.Command("true")
		if err := StartPinned(cmd, set); err != nil {
			b.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

// StartPinned hands its thread back to the Go runtime with the mask it had:
// after many pinned starts, every thread of this process still has the
// process's full mask.
func TestStartPinnedRestoresThread(t *testing.T) {
	all := allowed(t)
	set := cpuset.Of(all.First())
	for range 50 {
		cmd := exec.Command("true")
		if err := StartPinned(cmd, set); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	// A thread that other tests pinned and left locked is ended by the Go
	// runtime when its goroutine exits, but it may still be listed, with
	// its pin, for a moment; a thread handed back narrowed stays so. Look
	// until no narrowed thread is left, for up to two seconds.
	var narrowed []string
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		narrowed = narrowed[:0]
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			got, ok := procStatusListIfAlive("self/task/"+task.Name(), "Cpus_allowed_list")
			if ok && got != all.String() {
				narrowed = append(narrowed, fmt.Sprintf("thread %s: Cpus_allowed_list %s", task.Name(), got))
			}
		}
		if len(narrowed) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, n := range narrowed {
		t.Errorf("%s, want the process's %s", n, all)
	}
}
