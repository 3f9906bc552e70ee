// Step 1 of Build, NUMA part: the distance levels of sched_init_numa and
// their masks.
//
// The distances are those between nodes that have usable CPUs, as
// sched_init_numa's for_each_cpu_node_but() walks only N_CPU nodes. The
// smallest is the NODE rung's; each larger one d is a NUMA rung whose mask
// for a CPU is every usable CPU of the nodes at distance <= d from its node
// (sched_domains_numa_masks[j]). CPUs in no online node (CPU.Node == -1)
// get no NODE or NUMA mask, the CPUs of a node missing from the distance
// table no NUMA mask: their distance to anything is unknown, so they meet
// the other CPUs at MACHINE.

package domains

import (
	"fmt"
	"slices"

	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

const (
	// sdLocalDistance is LOCAL_DISTANCE (include/linux/topology.h): a node's
	// distance to itself.
	sdLocalDistance = 10
	// sdMaxDistance is the largest distance sched_init_numa accepts:
	// NR_DISTANCE_VALUES - 1 = (1 << DISTANCE_BITS) - 1, DISTANCE_BITS = 8.
	sdMaxDistance = 255
	// sdReclaimDistance is RECLAIM_DISTANCE (include/linux/topology.h), the
	// default of node_reclaim_distance: NUMA levels reaching further get no
	// exec/fork balancing and no wake-affine.
	sdReclaimDistance = 30
	// sdZenReclaimDistance is what arch/x86/kernel/cpu/amd.c
	// (init_amd_zen_common) sets node_reclaim_distance to on AMD Zen
	// (family 0x17 and later), whose cross-socket distance is 32.
	sdZenReclaimDistance = 32
)

// dist returns the distance from node from to node to (node_distance) and
// whether the table knows both.
func (b *builder) dist(from, to int) (int, bool) {
	i, ok1 := b.tableIdx[from]
	j, ok2 := b.tableIdx[to]
	if !ok1 || !ok2 {
		return 0, false
	}
	return b.t.Distances.Matrix[i][j], true
}

// initNUMA finds the distinct distances between nodes with usable CPUs, as
// sched_init_numa (sched_record_numa_dist) does over N_CPU nodes.
func (b *builder) initNUMA() {
	b.reclaim = sdReclaimDistance
	if ci := b.t.CPUInfo; ci.Vendor == "AuthenticAMD" && ci.Family >= 0x17 {
		b.reclaim = sdZenReclaimDistance
	}
	if b.t.Distances == nil {
		return
	}
	for n := range b.nodeCPUs {
		if _, ok := b.tableIdx[n]; ok && n >= 0 {
			b.numaNodes = append(b.numaNodes, n)
		} else if n >= 0 {
			b.note(fmt.Sprint("notable-", n), "node %d has usable CPUs but is not in the distance table; its CPUs meet the others at MACHINE", n)
		}
	}
	slices.Sort(b.numaNodes)
	seen := make(map[int]bool)
	for _, i := range b.numaNodes {
		for _, j := range b.numaNodes {
			d, _ := b.dist(i, j)
			if d < sdLocalDistance || d > sdMaxDistance {
				// sched_init_numa: sched_numa_warn("Invalid distance
				// value range") and no NUMA levels at all.
				b.note("range", "distance %d from node %d to node %d is outside %d..%d; no NUMA levels (sched_init_numa: invalid distance value range)", d, i, j, sdLocalDistance, sdMaxDistance)
				b.numaNodes = nil
				return
			}
			seen[d] = true
		}
	}
	for d := range seen {
		b.numaDist = append(b.numaDist, d)
	}
	slices.Sort(b.numaDist)
}

// numaMask returns the NODE or NUMA rung's mask for c, the CPUs of the
// nodes within the rung's distance of c's node (sched_domains_numa_masks),
// and whether there is one: without a usable distance table NODE is c's
// node and there are no NUMA masks.
func (b *builder) numaMask(r rung, c *topology.CPU) (cpuset.Set, bool) {
	if c.Node < 0 {
		return cpuset.Set{}, false
	}
	own := b.nodeCPUs[c.Node]
	if len(b.numaNodes) == 0 {
		if r.kind == rungNode {
			return own, true
		}
		return cpuset.Set{}, false
	}
	if _, ok := b.tableIdx[c.Node]; !ok {
		return own, r.kind == rungNode
	}
	// sched_init_numa: masks[i][j] |= cpumask_of_node(k) for every
	// node k with node_distance(j, k) <= sched_domains_numa_distance[i].
	key := [2]int{r.distance, c.Node}
	if span, ok := b.numaMasks[key]; ok {
		return span, true
	}
	span := own.Clone()
	for _, k := range b.numaNodes {
		if d, _ := b.dist(c.Node, k); d <= r.distance {
			span = span.Union(b.nodeCPUs[k])
		}
	}
	b.numaMasks[key] = span
	return span, true
}
