// Step 1 of Build: the ladder of levels every CPU climbs (Linux's
// sched_domain_topology_level table).
//
// Every CPU climbs the same rungs: SMT (its core), CLUSTER, LLC (the
// kernel's MC, cpu_coregroup_mask: CPUs sharing the last-level cache), DIE,
// PACKAGE, NODE (sched_domains_numa_masks[0]: its node), one NUMA rung per
// distinct node distance above the smallest (numa.go), MACHINE (every usable
// CPU). The rungs are default_topology[] spelled out, with DIE and PACKAGE
// both kept, plus the levels sched_init_numa appends.

package domains

import (
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// rungKind is the kind of one rung of the ladder.
type rungKind int

const (
	rungSMT rungKind = iota
	rungCluster
	rungLLC
	rungDie
	rungPackage
	rungNode
	rungNUMA
	rungMachine
)

// rung is one level every CPU climbs through (a sched_domain_topology_level).
type rung struct {
	name      LevelName
	kind      rungKind
	distance  int // NODE and NUMA: sched_domains_numa_distance[numaLevel]
	numaLevel int // NUMA: index into builder.numaDist
}

// initRungs lays out the ladder: default_topology[] plus the NODE and NUMA
// levels of sched_init_numa, plus MACHINE.
func (b *builder) initRungs() {
	nodeDist := sdLocalDistance
	if len(b.numaDist) > 0 {
		nodeDist = b.numaDist[0]
	}
	b.rungs = []rung{
		{name: SMT, kind: rungSMT},
		{name: Cluster, kind: rungCluster},
		{name: LLC, kind: rungLLC},
		{name: Die, kind: rungDie},
		{name: Package, kind: rungPackage},
		{name: Node, kind: rungNode, distance: nodeDist},
	}
	for j := 1; j < len(b.numaDist); j++ {
		b.rungs = append(b.rungs, rung{name: NUMA, kind: rungNUMA, distance: b.numaDist[j], numaLevel: j})
	}
	b.rungs = append(b.rungs, rung{name: Machine, kind: rungMachine})
}

// mask returns the rung's topology mask for c (tl->mask(cpu)), not yet
// intersected with the usable CPUs, and whether the topology knows it.
func (b *builder) mask(r rung, c *topology.CPU) (cpuset.Set, bool) {
	t := b.t
	switch r.kind {
	case rungSMT:
		if len(t.Cores) > 0 {
			return t.Cores[c.Core].CPUs, true
		}
	case rungCluster:
		if len(t.Clusters) > 0 {
			return t.Clusters[c.Cluster].CPUs, true
		}
	case rungLLC:
		s, ok := b.llc[c.ID]
		return s, ok
	case rungDie:
		if len(t.Dies) > 0 {
			return t.Dies[c.Die].CPUs, true
		}
	case rungPackage:
		if len(t.Packages) > 0 {
			return t.Packages[c.Package].CPUs, true
		}
	case rungNode, rungNUMA:
		return b.numaMask(r, c)
	case rungMachine:
		return b.usable, true
	}
	return cpuset.Set{}, false
}
