// Package domains builds the scheduling domains of a machine: for each
// usable CPU of a *topology.Topology, the chain of ever wider CPU sets it
// balances across, nearest first, each with its groups and the balancing
// parameters Linux would give it.
//
// The one idea is to build the hierarchy Linux's kernel/sched/topology.c
// builds for a root domain of the usable CPUs, so that a balancer can follow
// the kernel's load balancer level by level. Build is the only constructor.
// Nothing changes the Domains it returns, and any number of goroutines may
// share them. Data flows one way, topology → domains → balance → runtime:
// package topology does not import this one.
//
// Build takes five steps, named after what they follow in topology.c, each
// in its own file (the first in two):
//
//  1. Levels: the rungs every CPU climbs. ladder.go is the
//     sched_domain_topology_level table, default_topology[]'s SMT, CLS, MC
//     and PKG spelled out as SMT, CLUSTER, LLC, DIE and PACKAGE, then NODE,
//     the NUMA levels and MACHINE. numa.go is sched_init_numa: the distinct
//     distances between nodes with usable CPUs (sched_domains_numa_distance,
//     Domains.NUMADistances); the smallest is NODE's, and each larger one is
//     a NUMA level spanning the nodes within that distance
//     (sched_domains_numa_masks).
//  2. Spans (spans.go): build_sched_domains and build_sched_domain. A CPU's
//     span at a level is the level's mask within the usable CPUs, widened to
//     contain the span below; the CPU stops at the first span that holds
//     every usable CPU. Where a real machine fails topology_span_sane (an
//     LLC or a package across nodes, spans that overlap partly), the span is
//     clipped or the level dropped, and Domains.Notes says so.
//  3. Parameters (params.go): sd_init, per domain: the balance intervals,
//     busy_factor, imbalance_pct, cache_nice_tries and SD flags, and the
//     imb_numa_nr of build_sched_domains. The constants name the source of
//     every number.
//  4. Groups (groups.go): build_sched_groups, and on the overlapping NUMA
//     levels build_overlap_sched_groups with find_descended_sibling.
//  5. Degenerate domains (degenerate.go): cpu_attach_domain with
//     sd_degenerate and sd_parent_degenerate. A level that no CPU keeps is
//     not in Domains.Levels.
//
// build.go checks the Topology, runs the steps and assembles the result.
//
// numasteal departs from Linux in four places. imbalance_pct stays 125 above
// the LLC (Linux's default until v5.10), because a steal across packages or
// nodes costs a user-space runtime more than a kernel migration. DIE and
// PACKAGE are levels of their own where Linux's PKG level is the node.
// MACHINE, every usable CPU, closes a chain that no lower level closed, so
// that CPUs in no node, or in a node missing from the distance table, still
// meet the others. And a topology Linux would refuse is repaired as above
// instead.
package domains
