// Package metrics: Prometheus collectors for a numasteal runtime.Runtime and
// a proc.Runner, in a package of their own so that a program embedding the
// runtime without Prometheus does not link client_golang.
//
// NewRuntimeCollector exports Runtime.Stats, summed over the workers: the
// counters as numasteal_*_total (tasks run, spawned and injected, steals and
// failed steals by domain level, cross-node steals and migrations, parks,
// wakeups, periodic pulls), and the gauges numasteal_workers,
// numasteal_busy_workers and numasteal_queued_tasks by NUMA node, read from
// Runtime.Load at scrape time. The counters are each worker's folded ones
// (Runtime.Stats): a running worker's are at most one fold behind, a parked
// worker's exact. The runtime does not export how many workers are parked
// or spinning, so neither is here; busy workers is the nearest.
//
// NewRunnerCollector exports a proc.Runner's process slots: its size and how
// many running processes hold.
//
// Register them with a prometheus.Registry and serve it with promhttp, as
// `numasteal run --metrics ADDR` does:
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(metrics.NewRuntimeCollector(rt), metrics.NewRunnerCollector(runner))
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
package metrics
