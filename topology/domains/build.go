package domains

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// Scheduling domains, built the way Linux builds them in
// kernel/sched/topology.c. The steps, each named after the kernel function it
// follows:
//
//  1. The ladder (default_topology[] + sched_init_numa). Every CPU climbs the
//     same rungs: SMT (its core), CLUSTER, LLC (the kernel's MC,
//     cpu_coregroup_mask: CPUs sharing the last-level cache), DIE, PACKAGE,
//     NODE (sched_domains_numa_masks[0]: its node), one NUMA rung per distinct
//     node distance above the smallest (sched_domains_numa_masks[j]: every
//     CPU of the nodes at distance <= d from its node), MACHINE (every usable
//     CPU). The distances are those between nodes that have usable CPUs, as
//     sched_init_numa's for_each_cpu_node_but() walks only N_CPU nodes.
//
//  2. Spans (sd_init, build_sched_domain). A CPU's span at a rung is the
//     rung's mask intersected with the usable CPUs (sd_init's
//     cpumask_and(sd_span, cpu_map, tl->mask(cpu))), widened to contain the
//     span below it (build_sched_domain's "arch topology borken" fix-up).
//     A CPU stops climbing at the first span that holds every usable CPU
//     (build_sched_domains' "if (cpumask_equal(cpu_map, sd_span)) break").
//     Linux requires the rungs below NUMA to be nested and never to overlap
//     partially (topology_span_sane); a real dump does not always oblige, so:
//       - SMT, CLUSTER and LLC spans are clipped to the CPU's node, as
//         x86's match_llc() keeps an LLC from crossing nodes under Sub-NUMA
//         Clustering;
//       - a DIE or PACKAGE span that crosses a node boundary is not used for
//         that CPU (the rung repeats the span below it and is then dropped
//         as degenerate), as x86 drops its package level when
//         x86_has_numa_in_package: the NUMA rungs describe the package;
//       - a rung below NUMA whose spans overlap partially is dropped for
//         all CPUs, where Linux would refuse to build domains at all.
//     CPUs in no online node (CPU.Node == -1) are treated as one pseudo-node
//     for clipping, get no NODE or NUMA domains (their distance to anything
//     is unknown) and meet the other CPUs at MACHINE. A node missing from the
//     distance table is handled the same way for the NUMA rungs. Each such
//     departure is recorded once in Domains.Notes.
//
//  3. Parameters (sd_init), per domain, from the table below.
//
//  4. Groups (build_sched_groups, build_overlap_sched_groups): walking the
//     span from the CPU itself and wrapping around (for_each_cpu_wrap), each
//     CPU not yet covered contributes the span of its own domain one rung
//     below; the CPU's own group comes first. On the overlapping NUMA rungs
//     a sibling whose child span leaks out of the span is replaced by its
//     descendant that fits (find_descended_sibling), and a CPU that stopped
//     climbing earlier contributes nothing, exactly as in the kernel.
//
//  5. Degenerate domains (cpu_attach_domain with sd_parent_degenerate and
//     sd_degenerate): per CPU, a parent whose span equals its child's and
//     whose flags add nothing that works with one group is removed, then the
//     innermost domain is removed if it spans one CPU. A level that no CPU
//     keeps disappears from Domains.Levels.

// Parameters (sd_init in kernel/sched/topology.c unless said otherwise):
//
//	field            SMT   CLUSTER/LLC  DIE/PACKAGE/NODE  NUMA       where from
//	min_interval     w     w            w                 w          sd_init: .min_interval = sd_weight (ms), w = span weight
//	max_interval     2w    2w           2w                2w         sd_init: .max_interval = 2*sd_weight (ms)
//	busy_factor      16    16           16                16         sd_init: .busy_factor = 16 (32 before v5.10)
//	imbalance_pct    110   117          125               125        sd_init: SD_SHARE_CPUCAPACITY -> 110,
//	                                                                 SD_SHARE_LLC -> 117; 125 is the pre-v5.10
//	                                                                 default (see sdImbalanceAbove)
//	cache_nice_tries 0     1            1                 2          sd_init: SMT keeps the default 0, SD_SHARE_LLC
//	                                                                 -> 1, SD_NUMA -> 2, everything else -> 1
//	flags            base|SHARE_CPUCAPACITY|SHARE_LLC (cpu_smt_flags)
//	                       base|CLUSTER|SHARE_LLC (cpu_cluster_flags), base|SHARE_LLC (cpu_core_flags)
//	                                    base              base-PREFER_SIBLING|NUMA|SERIALIZE|OVERLAP,
//	                                                      and -EXEC-FORK-WAKE_AFFINE beyond node_reclaim_distance
//
// where base = BALANCE_NEWIDLE|BALANCE_EXEC|BALANCE_FORK|WAKE_AFFINE|
// PREFER_SIBLING (sd_init's initialiser; SD_BALANCE_WAKE stays 0), plus
// ASYM_CPUCAPACITY[_FULL] where the span holds CPUs of different capacity
// (asym_cpu_capacity_classify), which also takes PREFER_SIBLING off the
// child. MACHINE is treated as a NUMA level at an unknown (hence remote)
// distance when its span holds CPUs of more than one node, else like
// PACKAGE. imb_numa_nr follows build_sched_domains.
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

	// sdBusyFactor is sd_init's .busy_factor: 16 since "sched/fair: Reduce
	// busy load balance interval" (v5.10), 32 before.
	sdBusyFactor = 16

	sdImbalanceSMT = 110 // sd_init: SD_SHARE_CPUCAPACITY
	sdImbalanceLLC = 117 // sd_init: SD_SHARE_LLC (CLS and MC)
	// sdImbalanceAbove is the imbalance_pct of every level above the LLC. It
	// is sd_init's default up to v5.9; "sched/fair: Reduce minimal
	// imbalance threshold" (Vincent Guittot, v5.10, lkml
	// 20200921072424.14813-3) lowered the default to 117 for PKG and NUMA
	// too. numasteal keeps 125, as its design (issue 2) asks: a steal
	// across packages or nodes costs a user-space runtime more than a
	// kernel migration, so it waits for the larger imbalance. fair.c uses
	// the number in find_busiest_group (sched_balance_find_src_group since
	// v6.10: "100 * busiest->avg_load <= env->sd->imbalance_pct *
	// local->avg_load" means balanced), and halved, 100 + (pct-100)/2, in
	// find_idlest_group, wake_affine_weight and task_numa_migrate.
	sdImbalanceAbove = 125

	sdCacheNiceSMT   = 0 // sd_init's initialiser (.cache_nice_tries = 0)
	sdCacheNiceLLC   = 1 // sd_init: SD_SHARE_LLC
	sdCacheNiceNUMA  = 2 // sd_init: SD_NUMA
	sdCacheNiceOther = 1 // sd_init: the final else (PKG, NODE)

	// sdBaseFlags is sd_init's initialiser.
	sdBaseFlags = FlagBalanceNewIdle | FlagBalanceExec | FlagBalanceFork | FlagWakeAffine | FlagPreferSibling
	// sdNeedsGroups are the flags marked SDF_NEEDS_GROUPS in
	// include/linux/sched/sd_flags.h: they mean nothing in a domain with
	// one group (SD_DEGENERATE_GROUPS_MASK).
	sdNeedsGroups = FlagBalanceNewIdle | FlagBalanceExec | FlagBalanceFork | FlagBalanceWake |
		FlagShareCPUCapacity | FlagShareLLC | FlagSerialize | FlagNUMA | FlagAsymCapacity |
		FlagAsymCapacityFull | FlagPreferSibling | FlagCluster | FlagOverlap
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
	numaLevel int // NUMA: index into domainBuilder.numaDist
}

// rawDomain is one CPU's domain at one rung before degenerate domains are
// removed.
type rawDomain struct {
	span   cpuset.Set
	groups []cpuset.Set
	params Params
}

// domainBuilder holds the state of one Build call.
type domainBuilder struct {
	t      *topology.Topology
	usable cpuset.Set
	cpus   map[int]*topology.CPU // usable CPUs by id
	ids    []int                 // usable CPU ids, ascending
	// nodeCPUs are the usable CPUs of each node id; key -1 gathers the
	// CPUs in no online node.
	nodeCPUs map[int]cpuset.Set
	// tableIdx maps a node id to its row in t.Distances.
	tableIdx map[int]int
	// numaNodes are the nodes with usable CPUs that the table knows.
	numaNodes []int
	numaDist  []int
	// numaMasks caches sched_domains_numa_masks: {distance, node} -> CPUs.
	numaMasks map[[2]int]cpuset.Set
	reclaim   int
	llc       map[int]cpuset.Set // CPU id -> its last-level cache's CPUs
	// capClasses are the usable CPUs of each distinct capacity
	// (asym_cap_list, built by asym_cpu_capacity_scan).
	capClasses map[int]cpuset.Set
	rungs      []rung
	raw        map[int][]rawDomain // CPU id -> domains, one per rung climbed
	notes      []string
	noted      map[string]bool
}

// Build builds the scheduling-domain hierarchy of t's usable CPUs, as
// Linux's build_sched_domains would for a root domain of those CPUs. See the
// comment at the top of domains.go for the rules and where every number
// comes from.
//
// It fails only on a Topology that contradicts itself (nil, no usable CPU, a
// usable CPU missing from CPUs, an index out of range, a distance matrix of
// the wrong shape); oddities of real machines are handled and recorded in
// Domains.Notes.
func Build(t *topology.Topology) (*Domains, error) {
	b, err := newDomainBuilder(t)
	if err != nil {
		return nil, err
	}
	b.initNUMA()
	b.initRungs()
	b.buildSpans()
	b.buildParams()
	b.buildGroups()
	return b.attach(), nil
}

// newDomainBuilder checks t and indexes it.
func newDomainBuilder(t *topology.Topology) (*domainBuilder, error) {
	if t == nil {
		return nil, errors.New("domains: Build: nil Topology")
	}
	if t.Usable.IsEmpty() {
		return nil, errors.New("domains: Build: no usable CPUs")
	}
	b := &domainBuilder{
		t:          t,
		usable:     t.Usable.Clone(),
		cpus:       make(map[int]*topology.CPU),
		ids:        t.Usable.IDs(),
		nodeCPUs:   make(map[int]cpuset.Set),
		tableIdx:   make(map[int]int),
		llc:        make(map[int]cpuset.Set),
		capClasses: make(map[int]cpuset.Set),
		numaMasks:  make(map[[2]int]cpuset.Set),
		raw:        make(map[int][]rawDomain),
		noted:      make(map[string]bool),
	}
	byID := make(map[int]*topology.CPU, len(t.CPUs))
	for i := range t.CPUs {
		byID[t.CPUs[i].ID] = &t.CPUs[i]
	}
	for _, id := range b.ids {
		c, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("domains: Build: usable CPU %d is not in Topology.CPUs", id)
		}
		for _, ix := range []struct {
			what string
			i, n int
		}{
			{"Core", c.Core, len(t.Cores)},
			{"Cluster", c.Cluster, len(t.Clusters)},
			{"Die", c.Die, len(t.Dies)},
			{"Package", c.Package, len(t.Packages)},
		} {
			// An empty slice means the level is unknown; an index into a
			// non-empty one must be valid.
			if ix.n > 0 && (ix.i < 0 || ix.i >= ix.n) {
				return nil, fmt.Errorf("domains: Build: CPU %d: %s index %d out of range [0,%d)", id, ix.what, ix.i, ix.n)
			}
		}
		b.cpus[id] = c
		k := asymCapacityKey(c)
		cs := b.capClasses[k]
		cs.Add(id) // the map entry owns its set
		b.capClasses[k] = cs
		node := c.Node
		if node < 0 {
			node = -1
		}
		s := b.nodeCPUs[node]
		s.Add(id) // s is this map entry's own set: Add cannot alias another
		b.nodeCPUs[node] = s
	}
	if d := t.Distances; d != nil {
		if len(d.Matrix) != len(d.Nodes) {
			return nil, fmt.Errorf("domains: Build: distance table has %d rows for %d nodes", len(d.Matrix), len(d.Nodes))
		}
		for i, row := range d.Matrix {
			if len(row) != len(d.Nodes) {
				return nil, fmt.Errorf("domains: Build: distance row of node %d has %d entries for %d nodes", d.Nodes[i], len(row), len(d.Nodes))
			}
		}
		for i, n := range d.Nodes {
			if _, dup := b.tableIdx[n]; dup {
				return nil, fmt.Errorf("domains: Build: node %d appears twice in the distance table", n)
			}
			b.tableIdx[n] = i
		}
	}
	b.findLLCs()
	return b, nil
}

// note records a departure from the input once per key.
func (b *domainBuilder) note(key, format string, args ...any) {
	if b.noted[key] {
		return
	}
	b.noted[key] = true
	b.notes = append(b.notes, fmt.Sprintf(format, args...))
}

// findLLCs finds each usable CPU's last-level cache: the highest-level data
// or unified cache that holds it (what cacheinfo's cpu_coregroup_mask /
// llc_shared_map use on x86 and arm64).
func (b *domainBuilder) findLLCs() {
	level := make(map[int]int)
	for _, c := range b.t.Caches {
		if c.Type == topology.Instruction {
			continue
		}
		for id := range c.CPUs.All() {
			if _, ok := b.cpus[id]; ok && c.Level > level[id] {
				level[id] = c.Level
				b.llc[id] = c.CPUs
			}
		}
	}
}

// dist returns the distance from node from to node to (node_distance) and
// whether the table knows both.
func (b *domainBuilder) dist(from, to int) (int, bool) {
	i, ok1 := b.tableIdx[from]
	j, ok2 := b.tableIdx[to]
	if !ok1 || !ok2 {
		return 0, false
	}
	return b.t.Distances.Matrix[i][j], true
}

// initNUMA finds the distinct distances between nodes with usable CPUs, as
// sched_init_numa (sched_record_numa_dist) does over N_CPU nodes.
func (b *domainBuilder) initNUMA() {
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

// initRungs lays out the ladder: default_topology[] plus the NODE and NUMA
// levels of sched_init_numa, plus MACHINE.
func (b *domainBuilder) initRungs() {
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
func (b *domainBuilder) mask(r rung, c *topology.CPU) (cpuset.Set, bool) {
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
	case rungMachine:
		return b.usable, true
	}
	return cpuset.Set{}, false
}

// nodeOf returns the usable CPUs of c's node, or of the pseudo-node of CPUs
// in no node.
func (b *domainBuilder) nodeOf(c *topology.CPU) cpuset.Set {
	if c.Node < 0 {
		return b.nodeCPUs[-1]
	}
	return b.nodeCPUs[c.Node]
}

// buildSpans climbs the ladder rung by rung for every CPU at once, so that
// topology_span_sane can look at a whole rung before the next one uses it.
func (b *domainBuilder) buildSpans() {
	active := slices.Clone(b.ids)
	for ri, r := range b.rungs {
		if len(active) == 0 {
			break
		}
		spans := make(map[int]cpuset.Set, len(active))
		for _, id := range active {
			spans[id] = b.span(ri, r, b.cpus[id])
		}
		if r.kind < rungNode && !b.sane(active, spans) {
			b.note("sane-"+string(r.name), "%s spans overlap partially (topology_span_sane fails); the level is dropped", r.name)
			for _, id := range active {
				spans[id] = b.child(id, ri)
			}
		}
		next := active[:0]
		for _, id := range active {
			b.raw[id] = append(b.raw[id], rawDomain{span: spans[id]})
			// build_sched_domains: stop once the span is the whole map.
			if !spans[id].Equal(b.usable) {
				next = append(next, id)
			}
		}
		active = next
	}
}

// child returns the span of CPU id's domain one rung below ri ({id} at the
// bottom).
func (b *domainBuilder) child(id, ri int) cpuset.Set {
	if ri == 0 {
		return cpuset.Of(id)
	}
	return b.raw[id][ri-1].span
}

// span computes CPU c's span at rung ri.
func (b *domainBuilder) span(ri int, r rung, c *topology.CPU) cpuset.Set {
	child := b.child(c.ID, ri)
	m, ok := b.mask(r, c)
	if !ok {
		return child
	}
	span := m.Intersect(b.usable)
	node := b.nodeOf(c)
	switch r.kind {
	case rungCluster:
		// drivers/base/arch_topology.c, cpu_clustergroup_mask: "Forbid
		// cpu_clustergroup_mask() to span more or the same CPUs as
		// cpu_coregroup_mask()"; the cluster then falls back to the SMT
		// mask, i.e. the level is not used.
		if llc, ok := b.llc[c.ID]; ok {
			llc = llc.Intersect(b.usable).Intersect(node)
			if !span.IsSubsetOf(llc) || span.Equal(llc) {
				return child
			}
		}
	case rungDie:
		// A die that spans its whole package (what the kernel reports on
		// single-die parts) is no level of its own: the package is.
		if len(b.t.Packages) > 0 && span.Equal(b.t.Packages[c.Package].CPUs.Intersect(b.usable)) {
			return child
		}
	}
	switch r.kind {
	case rungSMT, rungCluster, rungLLC:
		if !span.IsSubsetOf(node) {
			b.note("clip-"+string(r.name), "%s span %s of CPU %d crosses its NUMA node; clipped to the node's CPUs", r.name, span, c.ID)
			span = span.Intersect(node)
		}
	case rungDie, rungPackage:
		if !span.IsSubsetOf(node) {
			b.note("skip-"+string(r.name), "%s span %s of CPU %d crosses NUMA nodes (NUMA in package); the level is not used there, the NUMA levels describe it", r.name, span, c.ID)
			return child
		}
	}
	if !child.IsSubsetOf(span) {
		// build_sched_domain: "BUG: arch topology borken", then
		// cpumask_or(sd_span, sd_span, child_span).
		b.note("widen-"+string(r.name), "%s span %s of CPU %d does not contain the span below it, %s; widened to contain it", r.name, span, c.ID, child)
		span = span.Union(child)
	}
	return span
}

// sane reports whether the spans of one rung are, any two of them, equal or
// disjoint (topology_span_sane).
func (b *domainBuilder) sane(active []int, spans map[int]cpuset.Set) bool {
	for _, id := range active {
		s := spans[id]
		for m := range s.All() {
			ms, ok := spans[m]
			if !ok || !ms.Equal(s) {
				return false
			}
		}
	}
	return true
}

// buildParams fills every raw domain's parameters (sd_init), then imb_numa_nr
// (build_sched_domains).
func (b *domainBuilder) buildParams() {
	for _, id := range b.ids {
		chain := b.raw[id]
		for ri := range chain {
			chain[ri].params = b.params(b.rungs[ri], chain[ri].span)
			// sd_init: "Don't attempt to spread across CPUs of different
			// capacities."
			if chain[ri].params.Flags&FlagAsymCapacity != 0 && ri > 0 {
				chain[ri-1].params.Flags &^= FlagPreferSibling
			}
		}
		setImbNUMANr(chain)
	}
}

// params derives one domain's parameters as sd_init does.
func (b *domainBuilder) params(r rung, span cpuset.Set) Params {
	w := span.Len()
	p := Params{
		MinIntervalMs: w,
		MaxIntervalMs: 2 * w,
		BusyFactor:    sdBusyFactor,
		ImbalancePct:  sdImbalanceAbove,
		Flags:         sdBaseFlags | b.asym(span),
	}
	distance := r.distance
	switch r.kind {
	case rungSMT:
		p.Flags |= FlagShareCPUCapacity | FlagShareLLC // cpu_smt_flags
	case rungCluster:
		p.Flags |= FlagCluster | FlagShareLLC // cpu_cluster_flags
	case rungLLC:
		p.Flags |= FlagShareLLC // cpu_core_flags
	case rungNUMA:
		p.Flags |= FlagNUMA | FlagOverlap // cpu_numa_flags, SDTL_OVERLAP
	case rungMachine:
		if b.crossesNodes(span) {
			p.Flags |= FlagNUMA
			distance = sdMaxDistance + 1 // unknown, so remote
		}
	}
	switch {
	case p.Flags&FlagShareCPUCapacity != 0:
		p.ImbalancePct = sdImbalanceSMT
		p.CacheNiceTries = sdCacheNiceSMT
	case p.Flags&FlagShareLLC != 0:
		p.ImbalancePct = sdImbalanceLLC
		p.CacheNiceTries = sdCacheNiceLLC
	case p.Flags&FlagNUMA != 0:
		p.CacheNiceTries = sdCacheNiceNUMA
		p.Flags &^= FlagPreferSibling
		p.Flags |= FlagSerialize
		if distance > b.reclaim {
			p.Flags &^= FlagBalanceExec | FlagBalanceFork | FlagWakeAffine
		}
	default:
		p.CacheNiceTries = sdCacheNiceOther
	}
	return p
}

// crossesNodes reports whether span holds CPUs of two nodes (the CPUs in no
// node counting as one more).
func (b *domainBuilder) crossesNodes(span cpuset.Set) bool {
	n := 0
	for _, cpus := range b.nodeCPUs {
		if cpus.Intersects(span) {
			n++
		}
	}
	return n > 1
}

// asymCapacityKey is what asym_cpu_capacity_classify compares:
// cpu_capacity when known, else the CPU kind on a hybrid machine, else 0 (all alike).
func asymCapacityKey(c *topology.CPU) int {
	switch {
	case c.Capacity > 0:
		return c.Capacity
	case c.Kind >= 0:
		return -1 - c.Kind
	}
	return 0
}

// asym classifies span's capacities as asym_cpu_capacity_classify does: two
// or more distinct capacities make it asymmetric, and fully so when every
// capacity among the usable CPUs is present.
func (b *domainBuilder) asym(span cpuset.Set) Flags {
	if len(b.capClasses) < 2 {
		return 0
	}
	count := 0
	for _, cpus := range b.capClasses {
		if cpus.Intersects(span) {
			count++
		}
	}
	switch {
	case count < 2:
		return 0
	case count < len(b.capClasses):
		return FlagAsymCapacity
	}
	return FlagAsymCapacity | FlagAsymCapacityFull
}

// setImbNUMANr sets imb_numa_nr along one CPU's chain, as build_sched_domains
// does: at the first level above the LLC it is the number of LLCs below (or
// an eighth of the span when there is one LLC), and above that it grows
// with the span relative to the first NUMA domain.
func setImbNUMANr(chain []rawDomain) {
	imb, imbSpan := 0, 1
	for i := range chain {
		sd := &chain[i]
		w := sd.span.Len()
		if i > 0 && sd.params.Flags&FlagShareLLC == 0 && chain[i-1].params.Flags&FlagShareLLC != 0 {
			nrLLCs := w / chain[i-1].span.Len()
			if nrLLCs == 1 {
				imb = w >> 3
			} else {
				imb = nrLLCs
			}
			imb = max(1, imb)
			sd.params.ImbNUMANr = imb
			imbSpan = w
			for j := i + 1; j < len(chain); j++ {
				if chain[j].params.Flags&FlagNUMA != 0 {
					imbSpan = chain[j].span.Len()
					break
				}
			}
		} else {
			sd.params.ImbNUMANr = imb * max(1, w/imbSpan)
		}
	}
}

// buildGroups builds every raw domain's groups (build_sched_groups and
// build_overlap_sched_groups, which give the same result on non-overlapping
// rungs).
func (b *domainBuilder) buildGroups() {
	for _, id := range b.ids {
		for ri := range b.raw[id] {
			b.raw[id][ri].groups = b.groups(id, ri)
		}
	}
}

// groups returns the groups of CPU cpu's domain at rung ri, its own first.
func (b *domainBuilder) groups(cpu, ri int) []cpuset.Set {
	span := b.raw[cpu][ri].span
	var covered cpuset.Set
	var out []cpuset.Set
	add := func(g cpuset.Set) {
		out = append(out, g)
		covered = covered.Union(g)
	}
	// for_each_cpu_wrap(i, span, cpu)
	order := wrapFrom(span, cpu)
	for _, i := range order {
		if covered.Contains(i) {
			continue
		}
		if ri == 0 {
			add(cpuset.Of(i)) // get_group without a child: the CPU alone
			continue
		}
		sib := b.raw[i]
		if len(sib) <= ri {
			// The sibling stopped climbing below this rung: "make sure
			// to skip domains that already cover the entire range".
			continue
		}
		k := ri
		if !sib[k-1].span.IsSubsetOf(span) {
			// find_descended_sibling
			for k > 0 && !sib[k-1].span.IsSubsetOf(span) {
				k--
			}
			for k > 0 && sib[k-1].span.Equal(sib[k].span) {
				k--
			}
		}
		if k > 0 {
			add(sib[k-1].span) // build_group_from_child_sched_domain
		} else {
			add(sib[0].span)
		}
	}
	// Linux leaves a CPU uncovered when every sibling that could cover it
	// stopped climbing early; cover it with its deepest domain that fits
	// so the groups always cover the span.
	for _, i := range order {
		if covered.Contains(i) {
			continue
		}
		g := cpuset.Of(i)
		for k := min(ri, len(b.raw[i])) - 1; k >= 0; k-- {
			if s := b.raw[i][k].span; s.IsSubsetOf(span) {
				g = s
				break
			}
		}
		b.note("cover", "CPU %d was covered by no group of CPU %d's %s domain; its own domain below was added as a group", i, cpu, b.rungs[ri].name)
		add(g)
	}
	return out
}

// wrapFrom lists span's CPUs from start upwards, then from the lowest up to
// start (for_each_cpu_wrap).
func wrapFrom(span cpuset.Set, start int) []int {
	ids := span.IDs()
	i, _ := slices.BinarySearch(ids, start)
	return append(ids[i:len(ids):len(ids)], ids[:i]...)
}

// sdDegenerate is sd_degenerate.
func sdDegenerate(d *rawDomain) bool {
	if d.span.Len() == 1 {
		return true
	}
	// Following flags need at least 2 groups.
	if d.params.Flags&sdNeedsGroups != 0 && len(d.groups) > 1 {
		return false
	}
	// Following flags don't use groups.
	return d.params.Flags&FlagWakeAffine == 0
}

// sdParentDegenerate is sd_parent_degenerate.
func sdParentDegenerate(d, parent *rawDomain) bool {
	if sdDegenerate(parent) {
		return true
	}
	if !d.span.Equal(parent.span) {
		return false
	}
	pflags := parent.params.Flags
	// Flags needing groups don't count if only 1 group in parent.
	if len(parent.groups) == 1 {
		pflags &^= sdNeedsGroups
	}
	return pflags&^d.params.Flags == 0
}

// attach removes the degenerate domains of every CPU (cpu_attach_domain) and
// assembles the result.
func (b *domainBuilder) attach() *Domains {
	type kept struct {
		rung int
		d    rawDomain
	}
	chains := make(map[int][]kept, len(b.ids))
	used := make([]bool, len(b.rungs))
	for _, id := range b.ids {
		var chain []kept
		for ri, d := range b.raw[id] {
			chain = append(chain, kept{ri, d})
		}
		for i := 0; i+1 < len(chain); {
			if sdParentDegenerate(&chain[i].d, &chain[i+1].d) {
				// Transfer SD_PREFER_SIBLING down: the spans match.
				chain[i].d.params.Flags |= chain[i+1].d.params.Flags & FlagPreferSibling
				chain = slices.Delete(chain, i+1, i+2)
			} else {
				i++
			}
		}
		if len(chain) > 0 && sdDegenerate(&chain[0].d) {
			chain = chain[1:]
		}
		for _, k := range chain {
			used[k.rung] = true
		}
		chains[id] = chain
	}

	out := &Domains{
		CPUs:          b.usable,
		NUMADistances: b.numaDist,
		Notes:         b.notes,
		chains:        make(map[int][]Domain, len(b.ids)),
	}
	levels := make([]*Level, len(b.rungs))
	for ri, r := range b.rungs {
		if !used[ri] {
			continue
		}
		l := &Level{Name: r.name, Depth: len(out.Levels)}
		if r.kind == rungNode || r.kind == rungNUMA {
			l.Distance = r.distance
		}
		levels[ri] = l
		out.Levels = append(out.Levels, l)
	}
	widest := make([]int, len(b.rungs))
	asym := make([]Flags, len(b.rungs))
	for _, id := range b.ids {
		doms := make([]Domain, 0, len(chains[id]))
		for _, k := range chains[id] {
			l := levels[k.rung]
			doms = append(doms, Domain{Level: l, Span: k.d.span, Groups: k.d.groups, Params: k.d.params})
			if !slices.ContainsFunc(l.Spans, k.d.span.Equal) {
				l.Spans = append(l.Spans, k.d.span)
			}
			if w := k.d.span.Len(); w > widest[k.rung] {
				widest[k.rung] = w
				l.Params = k.d.params
			}
			asym[k.rung] |= k.d.params.Flags & FlagAsymCapacity
		}
		out.chains[id] = doms
	}
	for ri, l := range levels {
		if l != nil {
			l.Params.Flags |= asym[ri]
			slices.SortFunc(l.Spans, compareSpans)
		}
	}
	return out
}

// compareSpans orders sets by first member, then by their member lists.
func compareSpans(a, b cpuset.Set) int {
	if c := cmp.Compare(a.First(), b.First()); c != 0 {
		return c
	}
	return slices.Compare(a.IDs(), b.IDs())
}
