package guest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
	l, ok := limitedLayout(t)
	if !ok {
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

// supervisedChild is TestTaskMemoryV2Killed's supervisor: alone in its
// cgroup, it makes a Supervisor with the tasks' memory cgroup and a
// watchdog, starts a task that sleeps, prints "ready RUN-CGROUP" and
// waits to be killed.
func supervisedChild() int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	s, err := supervise.New(supervise.Options{TaskMemoryLimit: 64 << 20, Watchdog: exe})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	m := s.Mechanisms()
	if m.TaskMemory.Dir == "" {
		fmt.Println("error no tasks' memory cgroup:", m.NoTaskMemoryReason)
		return 1
	}
	if _, err := s.Start(context.Background(), exec.Command("sleep", "1000")); err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("ready", m.Cgroup)
	select {}
}

// TestTaskMemoryV2Killed: a supervisor that moved to a leaf for the tasks'
// memory cgroup is SIGKILLed; its watchdog (in the leaf too) kills the
// task, removes the run's cgroup, disables the memory controller in the
// supervisor's cgroup again, moves itself back there and removes the leaf.
func TestTaskMemoryV2Killed(t *testing.T) {
	l, ok := limitedLayout(t)
	if !ok {
		return
	}
	leaf := limitedLeaf(t, int64(l.MemLimitMiB)<<20)
	// The supervisor alone in a cgroup of its own beside this test's.
	home := filepath.Join(filepath.Dir(leaf), "supervisor")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command("sh", "-c", `echo $$ > "$0" && exec "$@"`, filepath.Join(home, "cgroup.procs"), exe)
	c.Env = append(os.Environ(), childEnv+"=supervise")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	run, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		c.Process.Kill()
		c.Wait()
		t.Fatalf("the supervisor: %q, %v", line, err)
	}
	if sub, _ := os.ReadFile(filepath.Join(home, "cgroup.subtree_control")); !strings.Contains(string(sub), "memory") {
		t.Errorf("the supervisor's cgroup enables %q for its children, want memory", sub)
	}
	c.Process.Signal(syscall.SIGKILL)
	c.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, errRun := os.Stat(run)
		_, errLeaf := os.Stat(run + "-self")
		sub, _ := os.ReadFile(filepath.Join(home, "cgroup.subtree_control"))
		procs, _ := os.ReadFile(filepath.Join(home, "cgroup.procs"))
		// The watchdog moves back to the supervisor's cgroup and exits
		// there: its cgroup.procs may read empty a moment before the
		// cgroup can be removed.
		if os.IsNotExist(errRun) && os.IsNotExist(errLeaf) && !strings.Contains(string(sub), "memory") && len(bytes.TrimSpace(procs)) == 0 {
			err := os.Remove(home)
			if err == nil {
				break
			}
			errLeaf = err
		}
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the supervisor's SIGKILL: run cgroup %v, leaf %v, subtree_control %q, processes in its cgroup %q",
				errRun, errLeaf, sub, procs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
