package guest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/numasteal/numasteal/supervise"
)

// TestTaskMemoryV2 runs tasks in a memory cgroup of their own on a pure
// cgroup v2 machine, where v2 enables no controller below a cgroup with
// processes: in a limited group, with this process the only member of its
// leaf, the Supervisor moves itself to a leaf below it, enables the memory
// controller there and limits the run's cgroup. A task that fits runs; one
// that outgrows the tasks' limit, though not the group's, is OOM-killed in
// the run's cgroup, and the kill is counted there. Close puts this process
// back, disables the controller and removes the cgroups it made.
func TestTaskMemoryV2(t *testing.T) {
	l := layout(t)
	if l.MemLimitMiB == 0 {
		t.Logf("layout %s sets no memory limit; the tasks' memory cgroup check runs on cgroup2-memory-limit", l.Name)
		return
	}
	limit := int64(l.MemLimitMiB) << 20
	leaf := limitedLeaf(t, limit)
	s, err := supervise.New(supervise.Options{TaskMemoryLimit: limit / 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := s.Mechanisms()
	t.Logf("mechanisms: %s", m)
	if m.TaskMemory.Dir == "" || !m.TaskMemory.V2 || m.TaskMemory.Dir != m.Cgroup {
		t.Fatalf("tasks' memory cgroup %+v (%s), want the run's cgroup %s", m.TaskMemory, m.NoTaskMemoryReason, m.Cgroup)
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	moved := strings.TrimPrefix(m.Cgroup+"-self", cgroup2Mount(t))
	if got := strings.TrimSpace(string(self)); got != "0::"+moved {
		t.Errorf("/proc/self/cgroup = %q, want this process moved to %s", got, moved)
	}

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(mib int) error {
		src := filepath.Join(dir, fmt.Sprintf("m%d.c", mib))
		if err := os.WriteFile(src, fmt.Appendf(nil, "/* memhog mem=%d ms=400 */\n", mib), 0o644); err != nil {
			t.Fatal(err)
		}
		c := exec.Command(exe, "-c", src, "-o", src+".o")
		c.Env = append(os.Environ(), childEnv+"=alloc")
		task, err := s.Start(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return task.Wait()
	}
	events := func() string {
		b, _ := os.ReadFile(filepath.Join(m.TaskMemory.Dir, "memory.events"))
		return string(b)
	}
	small, big := l.MemLimitMiB/4, l.MemLimitMiB*3/4
	if err := run(small); err != nil {
		t.Errorf("a task of %d MiB under the tasks' %d MiB: %v", small, l.MemLimitMiB/2, err)
	}
	err = run(big)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("a task of %d MiB under the tasks' %d MiB (the group's %d): %v, want an OOM kill", big, l.MemLimitMiB/2, l.MemLimitMiB, err)
	}
	if ev := events(); !strings.Contains(ev, "oom_kill 1\n") {
		t.Errorf("the run's cgroup's memory.events:\n%s\nwant oom_kill 1", ev)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	self, _ = os.ReadFile("/proc/self/cgroup")
	if got, want := strings.TrimSpace(string(self)), "0::"+strings.TrimPrefix(leaf, cgroup2Mount(t)); got != want {
		t.Errorf("after Close /proc/self/cgroup = %q, want %q", got, want)
	}
	if sub, _ := os.ReadFile(filepath.Join(leaf, "cgroup.subtree_control")); strings.Contains(string(sub), "memory") {
		t.Errorf("after Close %s enables %q for its children", leaf, sub)
	}
	for _, d := range []string{m.Cgroup, m.Cgroup + "-self"} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("after Close %s is left: %v", d, err)
		}
	}
}
