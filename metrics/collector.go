package metrics

import (
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/numasteal/numasteal/proc"
	"github.com/numasteal/numasteal/runtime"
)

// namespace prefixes every metric name.
const namespace = "numasteal"

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(namespace+"_"+name, help, labels, nil)
}

// RuntimeCollector is a prometheus.Collector of a runtime's counters and
// queue lengths (see the package doc). It is safe for concurrent scrapes
// and costs the runtime nothing between them.
type RuntimeCollector struct {
	rt *runtime.Runtime

	tasksRun, spawned, injected, stolen     *prometheus.Desc
	steals, failedSteals, pulls             *prometheus.Desc
	crossSteals, crossMigrations, crossPull *prometheus.Desc
	parks, wakeups                          *prometheus.Desc
	workers, busy, queued                   *prometheus.Desc
	parked, spinning                        *prometheus.Desc
}

// NewRuntimeCollector returns a collector of rt. Scraping it after rt has
// closed reports the final counts.
func NewRuntimeCollector(rt *runtime.Runtime) *RuntimeCollector {
	return &RuntimeCollector{
		rt:              rt,
		tasksRun:        desc("tasks_run_total", "Tasks the workers ran."),
		spawned:         desc("tasks_spawned_total", "Tasks spawned by running tasks onto their worker's deque or LIFO slot."),
		injected:        desc("tasks_injected_total", "Tasks injected from outside the workers and taken from an inbox."),
		stolen:          desc("tasks_stolen_total", "Tasks stolen from a worker by another (a batch steal counts each task)."),
		steals:          desc("steals_total", "Successful steal operations, by the scheduling-domain level of the victim (distance: the NUMA distance of a NUMA level).", "level", "distance"),
		failedSteals:    desc("failed_steals_total", "Steal scans of a domain level that found nothing.", "level", "distance"),
		pulls:           desc("pulls_total", "Periodic balancing moves, by domain level.", "level", "distance"),
		crossSteals:     desc("cross_node_steals_total", "Steals from a worker on another NUMA node."),
		crossMigrations: desc("cross_node_migrations_total", "Tasks moved from another NUMA node by steals and pulls."),
		crossPull:       desc("cross_node_pulls_total", "Periodic balancing moves from another NUMA node."),
		parks:           desc("parks_total", "Times a worker parked with nothing to run."),
		wakeups:         desc("wakeups_total", "Times a parked worker was woken."),
		workers:         desc("workers", "Workers of the runtime."),
		busy:            desc("busy_workers", "Workers running a task at scrape time."),
		queued:          desc("queued_tasks", "Tasks waiting in the workers' queues at scrape time, by NUMA node.", "node"),
		parked:          desc("parked_workers", "Workers parked (asleep, waiting for work) at scrape time."),
		spinning:        desc("spinning_workers", "Workers searching for work to steal at scrape time."),
	}
}

// Describe implements prometheus.Collector.
func (c *RuntimeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.tasksRun, c.spawned, c.injected, c.stolen,
		c.steals, c.failedSteals, c.pulls, c.crossSteals, c.crossMigrations, c.crossPull,
		c.parks, c.wakeups, c.workers, c.busy, c.queued, c.parked, c.spinning} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *RuntimeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.rt.Stats()
	tot := &s.Total
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(c.tasksRun, tot.TasksRun)
	counter(c.spawned, tot.Spawned)
	counter(c.injected, tot.Injected)
	counter(c.stolen, tot.StolenFrom)
	for l, name := range s.Levels {
		level, distance := splitLevel(name)
		counter(c.steals, tot.Steals[l], level, distance)
		counter(c.failedSteals, tot.FailedSteals[l], level, distance)
		counter(c.pulls, tot.Pulls[l], level, distance)
	}
	counter(c.crossSteals, tot.CrossNodeSteals)
	counter(c.crossMigrations, tot.CrossNodeMigrations)
	counter(c.crossPull, tot.CrossNodePulls)
	counter(c.parks, tot.Parks)
	counter(c.wakeups, tot.Wakeups)

	load := c.rt.Load()
	busy := 0
	queued := map[int]int{}
	for _, w := range s.Workers {
		if load.Running(w.CPU) {
			busy++
		}
		queued[w.Node] += load.Queued(w.CPU)
	}
	ch <- prometheus.MustNewConstMetric(c.workers, prometheus.GaugeValue, float64(len(s.Workers)))
	ch <- prometheus.MustNewConstMetric(c.busy, prometheus.GaugeValue, float64(busy))
	ch <- prometheus.MustNewConstMetric(c.parked, prometheus.GaugeValue, float64(s.Parked))
	ch <- prometheus.MustNewConstMetric(c.spinning, prometheus.GaugeValue, float64(s.Spinning))
	for node, n := range queued {
		ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(n), nodeLabel(node))
	}
}

// splitLevel splits a runtime level name, "NUMA(20)", into its kind and
// NUMA distance, so that steals_total{level="NUMA",distance="20"} reads
// the same on every machine; "SMT" and "LLC" have no distance.
func splitLevel(name string) (level, distance string) {
	if i := strings.IndexByte(name, '('); i > 0 && strings.HasSuffix(name, ")") {
		return name[:i], name[i+1 : len(name)-1]
	}
	return name, ""
}

func nodeLabel(node int) string {
	if node < 0 {
		return "unknown"
	}
	return strconv.Itoa(node)
}

// RunnerCollector is a prometheus.Collector of a process runner's slots.
type RunnerCollector struct {
	r          *proc.Runner
	slots, use *prometheus.Desc
}

// NewRunnerCollector returns a collector of r.
func NewRunnerCollector(r *proc.Runner) *RunnerCollector {
	return &RunnerCollector{
		r:     r,
		slots: desc("process_slots", "Process slots of the runner: how many slots running processes may hold together."),
		use:   desc("process_slots_used", "Process slots held by running processes (and those about to fork)."),
	}
}

// Describe implements prometheus.Collector.
func (c *RunnerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.slots
	ch <- c.use
}

// Collect implements prometheus.Collector.
func (c *RunnerCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.slots, prometheus.GaugeValue, float64(c.r.Slots()))
	ch <- prometheus.MustNewConstMetric(c.use, prometheus.GaugeValue, float64(c.r.SlotsUsed()))
}
