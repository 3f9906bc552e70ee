// Package balance decides where work goes on a NUMA machine: the victim
// order of an idle worker, how much it steals, where a new task or process
// lands, and when periodic balancing moves queued work. It is the
// user-space counterpart of Linux's load balancer (kernel/sched/fair.c)
// run over the scheduling domains that package topology/domains builds.
//
// A Policy is bound to a machine (Bind) and answers through a Balancer: a
// shared, read-only part (Place, safe for concurrent use) and one Thief per
// CPU, owned by that CPU's worker. Policies see load only through the small
// Load interface, which both the runtime and the simulator in package bench
// implement, so the same decisions are exercised in both.
//
// Three policies: Hierarchical (the default; nearest domain first,
// busiest-group stealing gated by imbalance_pct, per-level intervals,
// should_we_balance, find_idlest placement, cache-hot hysteresis and
// distance-scaled steal amounts), Flat (random victim, steal half: the Go
// runtime's and Tokio's way) and Local (never leave the node).
package balance
