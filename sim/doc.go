// Package sim is a discrete-event simulator of numasteal's balancing
// policies on machines read from sysfs dumps: its figures are simulation,
// not measurement.
//
// Run simulates one workload (Workloads: kernbench, forkjoin, sdet) on the
// usable CPUs of a topology.Topology, usually a dump read with
// topology.WithRoot, under each balance.Policy in turn. The policies are
// the code the runtime uses, bound to the simulated machine and asked the
// same questions (whom to steal from, how much, where new work lands) in
// virtual time; task durations come from the workload, the costs of
// probes, steals, remote memory and cache refills from the model in Cost.
// RunFarm is the level above: the kernbench job graph on a compile farm of
// several hosts, comparing placement strategies (FarmStrategies) under the
// network model in FarmCost, with farm.Farm as numasteal's placement.
//
// The same Options and seed give the same Result. Nothing runs for real:
// package bench measures real programs, and sim uses neither its corpora
// (the kernbench workload here is a job graph of drawn durations, not files
// to compile) nor its SVG charts (the CLI prints tables or JSON). sim
// imports topology, balance and farm, never bench, runtime or cmd.
package sim
