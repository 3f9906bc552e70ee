package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/numasteal/numasteal/launch/daemon"
)

// DaemonCollector is a prometheus.Collector of the launchers' daemon
// (numasteal serve): its slots, running jobs, waiting jobs per build,
// memory budget and the memory its running jobs hold, what package memory
// sees (available memory, the cgroup limit, pressure, frozen jobs, OOM
// retries), the jobservers of numasteal exec builds (tokens lent and
// idle, lost tokens counted back), and its farm's hosts
// (the series of FarmCollector) when it has one. status is called at
// each scrape (numasteal serve asks its own socket); a scrape whose
// status fails reports nothing.
type DaemonCollector struct {
	status                  func() (daemon.Status, error)
	slots, running, waiting *prometheus.Desc
	budget, held, done      *prometheus.Desc
	avail, limit, inUse     *prometheus.Desc
	pressure, frozen        *prometheus.Desc
	freezes, retries, oomed *prometheus.Desc
	lent, idle, recovered   *prometheus.Desc
	hosts                   hostDescs
}

// NewDaemonCollector returns a collector of what status reports.
func NewDaemonCollector(status func() (daemon.Status, error)) *DaemonCollector {
	return &DaemonCollector{
		status:    status,
		slots:     desc("daemon_slots", "Jobs the daemon lets run at once, over every build on the machine."),
		running:   desc("daemon_jobs_running", "Jobs running under the daemon's slots."),
		waiting:   desc("daemon_jobs_waiting", "Jobs waiting for a slot or memory, by build.", "build"),
		budget:    desc("daemon_memory_budget_bytes", "The daemon's memory budget."),
		held:      desc("daemon_memory_held_bytes", "Memory the running jobs are expected to need (learned peak RSS, or a first guess)."),
		done:      desc("daemon_jobs_done_total", "Jobs the daemon has seen end."),
		avail:     desc("daemon_memory_available_bytes", "Memory that may still be allocated: the least of MemAvailable and every limited cgroup's limit less its working set."),
		limit:     desc("daemon_memory_limit_bytes", "The tightest cgroup memory limit of the daemon (0: none)."),
		inUse:     desc("daemon_memory_in_use_bytes", "Memory the running jobs' processes hold now."),
		pressure:  desc("daemon_memory_pressure_ratio", "Recent share of time tasks stalled on memory (PSI), by kind: some or full.", "kind"),
		frozen:    desc("daemon_jobs_frozen", "Running jobs frozen because memory ran out."),
		freezes:   desc("daemon_freezes_total", "Jobs frozen because memory ran out."),
		retries:   desc("daemon_oom_retries_total", "Jobs run again after the kernel OOM-killed them."),
		oomed:     desc("daemon_oom_failures_total", "Jobs the kernel OOM-killed that were not run again."),
		lent:      desc("daemon_jobserver_tokens_lent", "Tokens a build's jobserver holds or has idle (numasteal exec), by build.", "build"),
		idle:      desc("daemon_jobserver_tokens_idle", "Tokens idle in a build's jobserver pipe, by build.", "build"),
		recovered: desc("daemon_jobserver_tokens_recovered", "Tokens of a build's jobserver counted back after the process holding them died, by build.", "build"),
		hosts:     newHostDescs(),
	}
}

// Describe implements prometheus.Collector.
func (c *DaemonCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.slots, c.running, c.waiting, c.budget, c.held, c.done,
		c.avail, c.limit, c.inUse, c.pressure, c.frozen, c.freezes, c.retries, c.oomed, c.lent, c.idle, c.recovered} {
		ch <- d
	}
	c.hosts.describe(ch)
}

// Collect implements prometheus.Collector.
func (c *DaemonCollector) Collect(ch chan<- prometheus.Metric) {
	st, err := c.status()
	if err != nil {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.slots, float64(st.Slots))
	gauge(c.running, float64(len(st.Running)))
	for _, q := range st.Waiting {
		gauge(c.waiting, float64(q.Waiting), q.Build)
	}
	gauge(c.budget, float64(st.MemBudget<<10))
	gauge(c.held, float64(st.MemUsed<<10))
	ch <- prometheus.MustNewConstMetric(c.done, prometheus.CounterValue, float64(st.Done))
	m := st.Memory
	gauge(c.avail, float64(m.Available<<10))
	gauge(c.limit, float64(m.Limit<<10))
	gauge(c.inUse, float64(m.InUse<<10))
	gauge(c.pressure, m.Some/100, "some")
	gauge(c.pressure, m.Full/100, "full")
	gauge(c.frozen, float64(m.Frozen))
	for _, x := range []struct {
		d *prometheus.Desc
		v int64
	}{{c.freezes, m.Freezes}, {c.retries, m.OOMRetries}, {c.oomed, m.OOMFailed}} {
		ch <- prometheus.MustNewConstMetric(x.d, prometheus.CounterValue, float64(x.v))
	}
	for _, js := range st.Jobservers {
		gauge(c.lent, float64(js.Lent), js.Build)
		gauge(c.idle, float64(js.Idle), js.Build)
		gauge(c.recovered, float64(js.Recovered), js.Build)
	}
	for _, h := range st.Hosts {
		c.hosts.collect(ch, hostSample{h.Host, h.Down, h.Running, h.Slots, h.Score, h.Jobs, h.Failures})
	}
}
