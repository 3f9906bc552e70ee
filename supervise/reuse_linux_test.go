//go:build linux

package supervise

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Tasks started at once, each ended its own way (it exits, leaves a
// background job, is terminated, killed), monitored by their own
// goroutine or by the caller's (StartUnmonitored and Monitor): each ends
// whole; and in the cgroup mode later tasks reuse the idle task cgroups,
// none of which holds a process.
func TestReuseStress(t *testing.T) {
	modes(t, func(t *testing.T, o Options) {
		o.Subreaper = true
		s := newSup(t, o)
		dir := t.TempDir()
		const n = 48
		var wg sync.WaitGroup
		tasks := make([]*Task, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				script := "true"
				switch i % 4 {
				case 1:
					script = "sleep 30 & echo left"
				case 2, 3:
					script = "sleep 30"
				}
				var task *Task
				var err error
				if i%2 == 0 {
					task, err = s.StartUnmonitored(context.Background(), sh(dir, script), nil)
				} else {
					task, err = s.Start(context.Background(), sh(dir, script))
				}
				if err != nil {
					t.Error(err)
					return
				}
				tasks[i] = task
				switch i % 4 {
				case 2:
					task.Terminate()
				case 3:
					task.Kill()
				}
				if i%2 == 0 {
					task.Monitor()
				}
				task.Wait()
			}()
		}
		wg.Wait()
		for _, task := range tasks {
			if task != nil {
				assertNoneLeft(t, task)
			}
		}
		cg := s.Mechanisms().Cgroup
		if cg == "" || !s.cg.reuse {
			return
		}
		before := idleCgroups(t, cg)
		for range 10 {
			task, err := s.Start(context.Background(), sh(dir, "true"))
			if err != nil {
				t.Fatal(err)
			}
			task.Wait()
			assertNoneLeft(t, task)
		}
		if after := idleCgroups(t, cg); after > before {
			t.Errorf("%d task cgroups after 10 more tasks, %d before: not reused", after, before)
		}
	})
}

// idleCgroups counts the task cgroups below the run's cgroup dir, each of
// which must hold no process.
func idleCgroups(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if e.IsDir() {
			n++
			if cgroupPopulated(filepath.Join(dir, e.Name())) {
				t.Errorf("idle task cgroup %s holds a process", e.Name())
			}
		}
	}
	return n
}
