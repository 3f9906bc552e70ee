package metrics

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/buildrun"
	"github.com/numasteal/numasteal/farm"
	"github.com/numasteal/numasteal/launch/daemon"
)

func lint(t *testing.T, c prometheus.Collector) {
	t.Helper()
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

func TestBuildCollector(t *testing.T) {
	var p buildgraph.Progress
	p.Total, p.Waiting, p.Ready, p.Running = 10, 3, 2, 1
	p.Done[buildgraph.Succeeded], p.Done[buildgraph.NotRun] = 3, 1
	p.SlotsUsed, p.MemUsedMB = 2, 512
	c := NewBuildCollector(func() buildgraph.Progress { return p })
	lint(t, c)
	want := `
# HELP numasteal_build_memory_admitted_bytes Memory the build's running tasks declared, which the scheduler admitted against its limit.
# TYPE numasteal_build_memory_admitted_bytes gauge
numasteal_build_memory_admitted_bytes 5.36870912e+08
# HELP numasteal_build_tasks Tasks of the build without an outcome, by state: waiting (a dependency is not done), ready (waiting for slots or memory), running.
# TYPE numasteal_build_tasks gauge
numasteal_build_tasks{state="ready"} 2
numasteal_build_tasks{state="running"} 1
numasteal_build_tasks{state="waiting"} 3
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "numasteal_build_tasks", "numasteal_build_memory_admitted_bytes"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(c, "numasteal_build_tasks_done"); n != int(buildgraph.NumOutcomes)-1 {
		t.Errorf("%d build_tasks_done series, want one per outcome", n)
	}
}

func TestBuildMemoryCollector(t *testing.T) {
	var s buildrun.MemoryStats
	s.Budget, s.Sample.Limit, s.Sample.Available, s.Used = 2<<30, 1<<30, 300<<20, 600<<20
	s.Some, s.Full, s.Frozen, s.Waiting = 12.5, 3, 1, 4
	s.Freezes, s.Thaws, s.OOMRetries = 2, 1, 1
	c := NewBuildMemoryCollector(func() buildrun.MemoryStats { return s })
	lint(t, c)
	want := `
# HELP numasteal_build_memory_frozen_tasks Running tasks frozen for memory.
# TYPE numasteal_build_memory_frozen_tasks gauge
numasteal_build_memory_frozen_tasks 1
# HELP numasteal_build_memory_in_use_bytes Memory the build's running tasks hold.
# TYPE numasteal_build_memory_in_use_bytes gauge
numasteal_build_memory_in_use_bytes 6.291456e+08
# HELP numasteal_build_memory_oom_retries_total Tasks run again after the kernel's OOM killer ended them.
# TYPE numasteal_build_memory_oom_retries_total counter
numasteal_build_memory_oom_retries_total 1
# HELP numasteal_build_memory_pressure_percent Share of the last second in which some task, or every task (full), stalled on memory (PSI).
# TYPE numasteal_build_memory_pressure_percent gauge
numasteal_build_memory_pressure_percent{kind="full"} 3
numasteal_build_memory_pressure_percent{kind="some"} 12.5
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "numasteal_build_memory_frozen_tasks", "numasteal_build_memory_in_use_bytes",
		"numasteal_build_memory_oom_retries_total", "numasteal_build_memory_pressure_percent"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(c); n != 11 {
		t.Errorf("%d series, want 11", n)
	}
}

func TestFarmCollector(t *testing.T) {
	f := farm.New([]farm.Host{{Name: "a", Port: 3632, Slots: 4}, {Name: "b", Port: 3632, Slots: 2}}, farm.Config{})
	now := time.Now()
	l, ok := f.Acquire(now)
	if !ok {
		t.Fatal("no farm slot")
	}
	f.Release(l, farm.Outcome{HostFault: true}, now) // that host backs off
	c := NewFarmCollector(f)
	lint(t, c)
	if n := testutil.CollectAndCount(c, "numasteal_farm_host_up"); n != 2 {
		t.Errorf("%d farm_host_up series, want one per host", n)
	}
	up := map[string]float64{}
	for _, h := range f.Stats(now) {
		v := 1.0
		if h.Down {
			v = 0
		}
		up[h.Host.Addr()] = v
	}
	var b strings.Builder
	b.WriteString("# HELP numasteal_farm_host_up 1 while the farm host takes jobs, 0 while it backs off after a fault.\n# TYPE numasteal_farm_host_up gauge\n")
	for _, h := range []string{"a:3632", "b:3632"} {
		b.WriteString("numasteal_farm_host_up{host=\"" + h + "\"} ")
		if up[h] == 1 {
			b.WriteString("1\n")
		} else {
			b.WriteString("0\n")
		}
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(b.String()), "numasteal_farm_host_up"); err != nil {
		t.Error(err)
	}
	if up[l.Host.Addr()] != 0 {
		t.Errorf("the host with a fault is up: %v", up)
	}
}

func TestDaemonCollector(t *testing.T) {
	st := daemon.Status{Slots: 2, MemBudget: 1 << 20, MemUsed: 256 << 10, Done: 7,
		Running: []daemon.JobStatus{{ID: 1}}, Waiting: []daemon.BuildQueue{{Build: "make:1", Waiting: 3}},
		Hosts:      []daemon.HostStatus{{Host: "a:3632", Slots: 4, Running: 1, Jobs: 9}, {Host: "b:3632", Slots: 2, Failures: 1, Down: true}},
		Jobservers: []daemon.JobserverStatus{{Build: "make-9-1", Lent: 3, Idle: 1, Recovered: 2}}}
	c := NewDaemonCollector(func() (daemon.Status, error) { return st, nil })
	lint(t, c)
	want := `
# HELP numasteal_daemon_jobs_waiting Jobs waiting for a slot or memory, by build.
# TYPE numasteal_daemon_jobs_waiting gauge
numasteal_daemon_jobs_waiting{build="make:1"} 3
# HELP numasteal_daemon_memory_held_bytes Memory the running jobs are expected to need (learned peak RSS, or a first guess).
# TYPE numasteal_daemon_memory_held_bytes gauge
numasteal_daemon_memory_held_bytes 2.68435456e+08
# HELP numasteal_farm_host_up 1 while the farm host takes jobs, 0 while it backs off after a fault.
# TYPE numasteal_farm_host_up gauge
numasteal_farm_host_up{host="a:3632"} 1
numasteal_farm_host_up{host="b:3632"} 0
# HELP numasteal_farm_host_jobs_total Jobs the farm host compiled.
# TYPE numasteal_farm_host_jobs_total counter
numasteal_farm_host_jobs_total{host="a:3632"} 9
numasteal_farm_host_jobs_total{host="b:3632"} 0
# HELP numasteal_daemon_jobserver_tokens_lent Tokens a build's jobserver holds or has idle (numasteal exec), by build.
# TYPE numasteal_daemon_jobserver_tokens_lent gauge
numasteal_daemon_jobserver_tokens_lent{build="make-9-1"} 3
# HELP numasteal_daemon_jobserver_tokens_recovered Tokens of a build's jobserver counted back after the process holding them died, by build.
# TYPE numasteal_daemon_jobserver_tokens_recovered gauge
numasteal_daemon_jobserver_tokens_recovered{build="make-9-1"} 2
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "numasteal_daemon_jobs_waiting", "numasteal_daemon_memory_held_bytes",
		"numasteal_farm_host_up", "numasteal_farm_host_jobs_total", "numasteal_daemon_jobserver_tokens_lent", "numasteal_daemon_jobserver_tokens_recovered"); err != nil {
		t.Error(err)
	}
	down := NewDaemonCollector(func() (daemon.Status, error) { return daemon.Status{}, errors.New("no daemon") })
	if n := testutil.CollectAndCount(down); n != 0 {
		t.Errorf("%d metrics from a daemon that does not answer, want none", n)
	}
}
