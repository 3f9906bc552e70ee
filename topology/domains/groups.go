// Step 4 of Build: each domain's groups (build_sched_groups,
// build_overlap_sched_groups).
//
// Walking the span from the CPU itself and wrapping around
// (for_each_cpu_wrap), each CPU not yet covered contributes the span of its
// own domain one rung below; the CPU's own group comes first. On the
// overlapping NUMA rungs a sibling whose child span leaks out of the span is
// replaced by its descendant that fits (find_descended_sibling), and a CPU
// that stopped climbing earlier contributes nothing, exactly as in the
// kernel.

package domains

import (
	"slices"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// buildGroups builds every raw domain's groups (build_sched_groups and
// build_overlap_sched_groups, which give the same result on non-overlapping
// rungs).
func (b *builder) buildGroups() {
	for _, id := range b.ids {
		for ri := range b.raw[id] {
			b.raw[id][ri].groups = b.groups(id, ri)
		}
	}
}

// groups returns the groups of CPU cpu's domain at rung ri, its own first.
func (b *builder) groups(cpu, ri int) []cpuset.Set {
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
