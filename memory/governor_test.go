package memory

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A job's OOM-kill base is the count when it was added, not the count of
// a sample taken before (or never): else any SIGKILL of a job added
// before the first sample, on a machine that has had an OOM kill since
// boot, would pass for an OOM kill.
func TestAddReadsOOMBaseAfresh(t *testing.T) {
	src, err := Open("/", 0)
	if err != nil {
		t.Fatal(err)
	}
	before, err := src.Sample()
	if err != nil {
		t.Skipf("SKIP: no memory sample on this machine: %v", err)
	}
	g := NewGovernor(src, Thresholds{}, Options{})
	g.Add(1, JobSpec{Need: 1 << 20, Pid: os.Getpid()})
	e := g.Remove(1)
	if e.OOMKills < before.OOMKills {
		t.Errorf("Ended.OOMKills = %d, below the count %d read before Add", e.OOMKills, before.OOMKills)
	}
}

// OOMKills is the own cgroup's count when the process has a cgroup below
// the root (kills elsewhere on the machine do not count), else the
// machine's.
func TestSampleOOMKills(t *testing.T) {
	for _, tt := range []struct {
		own  string
		want int64
	}{
		{"/build", 2},
		{"/", 7},
	} {
		root := t.TempDir()
		files := map[string]string{
			"proc/self/cgroup": "4:memory:" + tt.own + "\n",
			"proc/meminfo":     "MemTotal: 2000000 kB\nMemAvailable: 1000000 kB\n",
			"proc/vmstat":      "pgfault 5\noom_kill 7\n",
			"sys/fs/cgroup/memory/memory.usage_in_bytes":       "4096\n",
			"sys/fs/cgroup/memory/memory.oom_control":          "oom_kill_disable 0\nunder_oom 0\n",
			"sys/fs/cgroup/memory/build/memory.limit_in_bytes": "536870912\n",
			"sys/fs/cgroup/memory/build/memory.usage_in_bytes": "4096\n",
			"sys/fs/cgroup/memory/build/memory.oom_control":    "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
		}
		for name, text := range files {
			p := filepath.Join(root, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		src, err := Open(root, 0)
		if err != nil {
			t.Fatal(err)
		}
		s, err := src.Sample()
		if err != nil {
			t.Fatal(err)
		}
		if s.OOMKills != tt.want {
			t.Errorf("own cgroup %s: OOMKills %d, want %d", tt.own, s.OOMKills, tt.want)
		}
	}
}

// A sample taken between a job's Admit and its Add still counts the job's
// need: else the next Admit sees room the job has taken.
func TestAdmitThenSampleThenAdd(t *testing.T) {
	src, err := Open("/", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Sample(); err != nil {
		t.Skipf("SKIP: no memory sample on this machine: %v", err)
	}
	const need = 100 << 20
	g := NewGovernor(src, Thresholds{Budget: 350 << 20}, Options{})
	for id := int64(1); id <= 3; id++ {
		if !g.Admit(need, int(id-1)) {
			// This machine has less than the budget free: nothing to check.
			t.Skipf("SKIP: job %d of 100 MiB not admitted on this machine", id)
		}
		if id == 3 {
			g.mu.Lock()
			g.sampleLocked(time.Now())
			g.mu.Unlock()
		}
		g.Add(id, JobSpec{Need: need})
	}
	if g.Admit(need, 3) {
		t.Error("a fourth job of 100 MiB admitted under a budget of 350 MiB")
	}
}
