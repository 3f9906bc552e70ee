package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/buildrun"
	"github.com/numasteal/numasteal/farm"
)

// BuildCollector is a prometheus.Collector of a build's progress: its
// tasks by state, and the slots and memory the running tasks hold (the
// memory the scheduler admitted against its limit). progress is called
// at each scrape; it must be safe for concurrent use and cheap (a
// buildgraph.Scheduler's Progress reads counters kept as the run goes).
type BuildCollector struct {
	progress    func() buildgraph.Progress
	tasks, done *prometheus.Desc
	slots, mem  *prometheus.Desc
}

// NewBuildCollector returns a collector of the progress progress returns.
func NewBuildCollector(progress func() buildgraph.Progress) *BuildCollector {
	return &BuildCollector{
		progress: progress,
		tasks:    desc("build_tasks", "Tasks of the build without an outcome, by state: waiting (a dependency is not done), ready (waiting for slots or memory), running.", "state"),
		done:     desc("build_tasks_done", "Tasks of the build with an outcome, by outcome.", "outcome"),
		slots:    desc("build_slots_used", "CPU slots the build's running tasks hold."),
		mem:      desc("build_memory_admitted_bytes", "Memory the build's running tasks declared, which the scheduler admitted against its limit."),
	}
}

// Describe implements prometheus.Collector.
func (c *BuildCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.tasks, c.done, c.slots, c.mem} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *BuildCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.progress()
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	gauge(c.tasks, p.Waiting, "waiting")
	gauge(c.tasks, p.Ready, "ready")
	gauge(c.tasks, p.Running, "running")
	for o := buildgraph.Outcome(0); o < buildgraph.NumOutcomes; o++ {
		if o != buildgraph.Unfinished {
			gauge(c.done, p.Done[o], strings.ReplaceAll(o.String(), " ", "_"))
		}
	}
	gauge(c.slots, p.SlotsUsed)
	gauge(c.mem, p.MemUsedMB<<20)
}

// FarmCollector is a prometheus.Collector of a compile farm's hosts: up
// or backing off, slots in use, jobs and host faults, placement score.
type FarmCollector struct {
	f *farm.Farm
	d hostDescs
}

// NewFarmCollector returns a collector of f.
func NewFarmCollector(f *farm.Farm) *FarmCollector {
	return &FarmCollector{f: f, d: newHostDescs()}
}

// Describe implements prometheus.Collector.
func (c *FarmCollector) Describe(ch chan<- *prometheus.Desc) { c.d.describe(ch) }

// Collect implements prometheus.Collector.
func (c *FarmCollector) Collect(ch chan<- prometheus.Metric) {
	for _, h := range c.f.Stats(time.Now()) {
		c.d.collect(ch, hostSample{h.Host.Addr(), h.Down, h.Running, h.Host.Slots, h.Score, h.Jobs, h.Failures})
	}
}

// hostDescs are the series of one farm host, which both a run's farm
// (FarmCollector) and the daemon's (DaemonCollector) report.
type hostDescs struct {
	up, running, slots, score *prometheus.Desc
	jobs, failures            *prometheus.Desc
}

func newHostDescs() hostDescs {
	return hostDescs{
		up:       desc("farm_host_up", "1 while the farm host takes jobs, 0 while it backs off after a fault.", "host"),
		running:  desc("farm_host_slots_used", "Jobs running on the farm host.", "host"),
		slots:    desc("farm_host_slots", "Jobs the farm host may run at once (its /LIMIT).", "host"),
		score:    desc("farm_host_score", "The farm host's placement score: the reciprocal of its expected seconds per job (0 while down).", "host"),
		jobs:     desc("farm_host_jobs_total", "Jobs the farm host compiled.", "host"),
		failures: desc("farm_host_failures_total", "Host faults of the farm host (connect, protocol, time-out).", "host"),
	}
}

func (d hostDescs) describe(ch chan<- *prometheus.Desc) {
	for _, x := range []*prometheus.Desc{d.up, d.running, d.slots, d.score, d.jobs, d.failures} {
		ch <- x
	}
}

// hostSample is one host's figures at a scrape.
type hostSample struct {
	host           string
	down           bool
	running, slots int
	score          float64
	jobs, failures int
}

func (d hostDescs) collect(ch chan<- prometheus.Metric, h hostSample) {
	up := 1.0
	if h.down {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(d.up, prometheus.GaugeValue, up, h.host)
	ch <- prometheus.MustNewConstMetric(d.running, prometheus.GaugeValue, float64(h.running), h.host)
	ch <- prometheus.MustNewConstMetric(d.slots, prometheus.GaugeValue, float64(h.slots), h.host)
	ch <- prometheus.MustNewConstMetric(d.score, prometheus.GaugeValue, h.score, h.host)
	ch <- prometheus.MustNewConstMetric(d.jobs, prometheus.CounterValue, float64(h.jobs), h.host)
	ch <- prometheus.MustNewConstMetric(d.failures, prometheus.CounterValue, float64(h.failures), h.host)
}

// BuildMemoryCollector is a prometheus.Collector of a build's memory
// governor (buildrun.MemoryStats): the budget, the cgroup limit and the
// memory available, what the running tasks hold, the memory pressure, the
// tasks frozen and waiting for memory, and the freezes, thaws and OOM
// retries so far. stats is called at each scrape and must be safe for
// concurrent use.
type BuildMemoryCollector struct {
	stats                      func() buildrun.MemoryStats
	budget, limit, avail, used *prometheus.Desc
	pressure, frozen, waiting  *prometheus.Desc
	freezes, thaws, oomRetries *prometheus.Desc
}

// NewBuildMemoryCollector returns a collector of the stats stats returns.
func NewBuildMemoryCollector(stats func() buildrun.MemoryStats) *BuildMemoryCollector {
	return &BuildMemoryCollector{
		stats:      stats,
		budget:     desc("build_memory_budget_bytes", "The build's memory budget (--mem); 0: none, the limit and the available memory bound it."),
		limit:      desc("build_memory_limit_bytes", "The tightest memory limit of numasteal's cgroups; 0: none."),
		avail:      desc("build_memory_available_bytes", "Memory that may still be allocated: the least of MemAvailable and each limited cgroup's headroom."),
		used:       desc("build_memory_in_use_bytes", "Memory the build's running tasks hold."),
		pressure:   desc("build_memory_pressure_percent", "Share of the last second in which some task, or every task (full), stalled on memory (PSI).", "kind"),
		frozen:     desc("build_memory_frozen_tasks", "Running tasks frozen for memory."),
		waiting:    desc("build_memory_waiting_tasks", "Tasks waiting for memory to start."),
		freezes:    desc("build_memory_freezes_total", "Freezes of running tasks for memory."),
		thaws:      desc("build_memory_thaws_total", "Thaws of frozen tasks."),
		oomRetries: desc("build_memory_oom_retries_total", "Tasks run again after the kernel's OOM killer ended them."),
	}
}

// Describe implements prometheus.Collector.
func (c *BuildMemoryCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.budget, c.limit, c.avail, c.used, c.pressure, c.frozen, c.waiting, c.freezes, c.thaws, c.oomRetries} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *BuildMemoryCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	metric := func(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, t, v, labels...)
	}
	metric(c.budget, prometheus.GaugeValue, float64(s.Budget))
	metric(c.limit, prometheus.GaugeValue, float64(s.Sample.Limit))
	metric(c.avail, prometheus.GaugeValue, float64(s.Sample.Available))
	metric(c.used, prometheus.GaugeValue, float64(s.Used))
	metric(c.pressure, prometheus.GaugeValue, s.Some, "some")
	metric(c.pressure, prometheus.GaugeValue, s.Full, "full")
	metric(c.frozen, prometheus.GaugeValue, float64(s.Frozen))
	metric(c.waiting, prometheus.GaugeValue, float64(s.Waiting))
	metric(c.freezes, prometheus.CounterValue, float64(s.Freezes))
	metric(c.thaws, prometheus.CounterValue, float64(s.Thaws))
	metric(c.oomRetries, prometheus.CounterValue, float64(s.OOMRetries))
}
