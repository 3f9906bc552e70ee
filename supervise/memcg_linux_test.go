package supervise

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/internal/memtest"
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// Tasks run in a memory cgroup of their own, limited as asked, however
// they are started: a task that fits runs with all its memory charged
// there (v1: born there, its forking thread in the cgroup); one that
// outgrows the limit is OOM-killed there and the kill counted there; this
// process stays outside; Close removes the cgroup.
func TestTaskMemory(t *testing.T) {
	// The group gives v2 a parent for the run's cgroup with the memory
	// controller on (v2 enables none below a cgroup with processes, such
	// as this test's); in v1 the tasks' cgroup goes below this process's.
	g := memtest.NewGroup(t, 512<<20)
	dir := t.TempDir()
	memhog, _ := memtest.BuildMemhog(t, dir)
	cpus, err := affinity.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	// startHere calls StartHere and then Task.Monitor through run, which
	// runs them on a thread of the goroutine it starts.
	startHere := func(s *Supervisor, cmd *exec.Cmd, run func(func())) (*Task, error) {
		type started struct {
			task *Task
			err  error
		}
		c := make(chan started, 1)
		go run(func() {
			task, err := s.StartHere(context.Background(), cmd, nil)
			c <- started{task, err}
			if err == nil {
				task.Monitor()
			}
		})
		r := <-c
		return r.task, r.err
	}
	starts := map[string]func(s *Supervisor, cmd *exec.Cmd) (*Task, error){
		"Start": func(s *Supervisor, cmd *exec.Cmd) (*Task, error) { return s.Start(context.Background(), cmd) },
		"StartPlaced one CPU": func(s *Supervisor, cmd *exec.Cmd) (*Task, error) {
			return s.StartPlaced(context.Background(), cmd, affinity.Placement{CPUs: cpuset.Of(cpus.Last())})
		},
		"StartHere": func(s *Supervisor, cmd *exec.Cmd) (*Task, error) {
			return startHere(s, cmd, func(f func()) { f() })
		},
		// The main thread must stay out of a v1 tasks' cgroup, and the
		// child must still be born in it.
		"StartHere on the main thread": func(s *Supervisor, cmd *exec.Cmd) (*Task, error) {
			return startHere(s, cmd, onMainThread)
		},
	}
	for name, start := range starts {
		t.Run(name, func(t *testing.T) {
			o := Options{TaskMemoryLimit: 96 << 20}
			if g.V2 {
				o.CgroupParent = g.Dir
			}
			s, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			m := s.Mechanisms()
			if m.TaskMemory.Dir == "" {
				t.Fatalf("no tasks' memory cgroup: %s", m.NoTaskMemoryReason)
			}
			if !strings.Contains(m.String(), "memcg="+m.TaskMemory.Dir) {
				t.Errorf("Mechanisms.String() = %q lacks the tasks' memory cgroup", m.String())
			}
			limitFile, events, peakFile := "memory.limit_in_bytes", "memory.oom_control", "memory.max_usage_in_bytes"
			if m.TaskMemory.V2 {
				limitFile, events, peakFile = "memory.max", "memory.events", "memory.peak"
			}
			read := func(file, key string) int64 {
				t.Helper()
				b, err := os.ReadFile(filepath.Join(m.TaskMemory.Dir, file))
				if err != nil {
					t.Fatal(err)
				}
				text := strings.TrimSpace(string(b))
				if key != "" {
					for _, line := range strings.Split(text, "\n") {
						if v, ok := strings.CutPrefix(line, key+" "); ok {
							text = v
						}
					}
				}
				n, err := strconv.ParseInt(text, 10, 64)
				if err != nil {
					t.Fatalf("%s: %q", file, b)
				}
				return n
			}
			if got := read(limitFile, ""); got != 96<<20 {
				t.Errorf("%s = %d, want %d", limitFile, got, 96<<20)
			}
			run := func(mib int) error {
				src := filepath.Join(dir, name+".c")
				if err := os.WriteFile(src, []byte("/* memhog mem="+strconv.Itoa(mib)+" ms=200 */\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				task, err := start(s, exec.Command(memhog, src, "-o", filepath.Join(dir, name+".o")))
				if err != nil {
					t.Fatal(err)
				}
				return task.Wait()
			}
			if err := run(40); err != nil {
				t.Fatalf("a task of 40 MiB under a limit of 96 MiB: %v", err)
			}
			if peak := read(peakFile, ""); peak < 40<<20 {
				t.Errorf("the tasks' cgroup held at most %d MiB, want the task's 40 MiB and more charged there", peak>>20)
			}
			if got := read(events, "oom_kill"); got != 0 {
				t.Errorf("%d OOM kills before the big task", got)
			}
			// The limit moves, and lifts, as asked; back to 96 MiB after.
			if err := s.SetTaskMemoryLimit(64 << 20); err != nil {
				t.Fatal(err)
			}
			if got := read(limitFile, ""); got != 64<<20 {
				t.Errorf("after SetTaskMemoryLimit(64 MiB): %s = %d", limitFile, got)
			}
			if err := s.SetTaskMemoryLimit(0); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(filepath.Join(m.TaskMemory.Dir, limitFile)); m.TaskMemory.V2 && strings.TrimSpace(string(b)) != "max" ||
				!m.TaskMemory.V2 && read(limitFile, "") < 1<<40 {
				t.Errorf("after SetTaskMemoryLimit(0): %s = %q, want no limit", limitFile, b)
			}
			if err := s.SetTaskMemoryLimit(96 << 20); err != nil {
				t.Fatal(err)
			}
			if sig := exitSignal(run(200)); sig != syscall.SIGKILL {
				t.Errorf("a task of 200 MiB under a limit of 96 MiB ended by %v, want the OOM killer's SIGKILL", sig)
			}
			if got := read(events, "oom_kill"); got != 1 {
				t.Errorf("%d OOM kills in the tasks' cgroup, want 1", got)
			}
			if own, _ := os.ReadFile("/proc/self/cgroup"); strings.Contains(string(own), filepath.Base(m.TaskMemory.Dir)) {
				t.Errorf("this process is in the tasks' cgroup:\n%s", own)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(m.TaskMemory.Dir); !os.IsNotExist(err) {
				t.Errorf("the tasks' memory cgroup is left after Close: %v", err)
			}
		})
	}
}

// Without a run cgroup (Options.NoCgroup), a tasks' memory cgroup is
// made where the v1 hierarchy holds the memory controller, and where v2
// does there is none, Mechanisms says why; either way the tasks run.
func TestTaskMemoryNoRunCgroup(t *testing.T) {
	groups, err := topology.MemoryCgroups("/", 0)
	if err != nil {
		t.Fatal(err)
	}
	s := newSup(t, Options{NoCgroup: true, TaskMemoryLimit: 64 << 20})
	m := s.Mechanisms()
	switch {
	case len(groups) > 0 && groups[0].V2:
		if m.TaskMemory.Dir != "" || !strings.Contains(m.NoTaskMemoryReason, "the run has no cgroup") {
			t.Errorf("v2 without a run cgroup: tasks' memory cgroup %q, reason %q; want none, the run having no cgroup", m.TaskMemory.Dir, m.NoTaskMemoryReason)
		}
	case m.TaskMemory.Dir == "" && m.NoTaskMemoryReason == "":
		t.Error("no tasks' memory cgroup and no reason")
	case m.TaskMemory.Dir != "" && (m.TaskMemory.V2 || !strings.HasPrefix(m.TaskMemory.Dir, groups[0].Dir+"/")):
		t.Errorf("tasks' memory cgroup %+v, want a v1 cgroup below this process's %s", m.TaskMemory, groups[0].Dir)
	}
	task, err := s.Start(context.Background(), exec.Command("true"))
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := s.SetTaskMemoryLimit(32 << 20); m.TaskMemory.Dir == "" && !errors.Is(err, ErrNoTaskMemory) || m.TaskMemory.Dir != "" && err != nil {
		t.Errorf("SetTaskMemoryLimit with tasks' memory cgroup %q: %v", m.TaskMemory.Dir, err)
	}
}

// skipNoTaskMemory skips a test that needs the tasks' memory cgroup where
// it could not be made.
func skipNoTaskMemory(t *testing.T, why string) {
	t.Helper()
	t.Skipf("SKIP: no memory cgroup for the tasks here: %s", why)
}
