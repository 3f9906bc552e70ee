// Step 2 of Build: each CPU's span at each rung (build_sched_domains,
// build_sched_domain, topology_span_sane).
//
// A CPU's span at a rung is the rung's mask intersected with the usable
// CPUs (sd_init's cpumask_and(sd_span, cpu_map, tl->mask(cpu))), widened to
// contain the span below it (build_sched_domain's "arch topology borken"
// fix-up). A CPU stops climbing at the first span that holds every usable
// CPU (build_sched_domains' "if (cpumask_equal(cpu_map, sd_span)) break").
// Linux requires the rungs below NUMA to be nested and never to overlap
// partially (topology_span_sane); a real dump does not always oblige, so:
//   - SMT, CLUSTER and LLC spans are clipped to the CPU's node, as x86's
//     match_llc() keeps an LLC from crossing nodes under Sub-NUMA
//     Clustering;
//   - a DIE or PACKAGE span that crosses a node boundary is not used for
//     that CPU (the rung repeats the span below it and is then dropped as
//     degenerate), as x86 drops its package level when
//     x86_has_numa_in_package: the NUMA rungs describe the package;
//   - a rung below NUMA whose spans overlap partially is dropped for all
//     CPUs, where Linux would refuse to build domains at all.
//
// CPUs in no online node are one pseudo-node for the clipping. Each such
// departure is recorded once in Domains.Notes.

package domains

import (
	"slices"

	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// buildSpans climbs the ladder rung by rung for every CPU at once, so that
// topology_span_sane can look at a whole rung before the next one uses it.
func (b *builder) buildSpans() {
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
func (b *builder) child(id, ri int) cpuset.Set {
	if ri == 0 {
		return cpuset.Of(id)
	}
	return b.raw[id][ri-1].span
}

// span computes CPU c's span at rung ri.
func (b *builder) span(ri int, r rung, c *topology.CPU) cpuset.Set {
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
func (b *builder) sane(active []int, spans map[int]cpuset.Set) bool {
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

// nodeOf returns the usable CPUs of c's node, or of the pseudo-node of CPUs
// in no node.
func (b *builder) nodeOf(c *topology.CPU) cpuset.Set {
	if c.Node < 0 {
		return b.nodeCPUs[-1]
	}
	return b.nodeCPUs[c.Node]
}
