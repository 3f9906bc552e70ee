// Step 5 of Build: degenerate domains are removed (cpu_attach_domain,
// sd_degenerate, sd_parent_degenerate).
//
// Per CPU, a parent whose span equals its child's and whose flags add
// nothing that works with one group is removed, then the innermost domain
// is removed if it spans one CPU. A level that no CPU keeps disappears from
// Domains.Levels (assemble, in build.go).

package domains

import "slices"

// sdNeedsGroups are the flags marked SDF_NEEDS_GROUPS in
// include/linux/sched/sd_flags.h: they mean nothing in a domain with one
// group (SD_DEGENERATE_GROUPS_MASK).
const sdNeedsGroups = FlagBalanceNewIdle | FlagBalanceExec | FlagBalanceFork | FlagBalanceWake |
	FlagShareCPUCapacity | FlagShareLLC | FlagSerialize | FlagNUMA | FlagAsymCapacity |
	FlagAsymCapacityFull | FlagPreferSibling | FlagCluster | FlagOverlap

// keptDomain is a domain that degenerate removal kept, with the rung it was
// built at.
type keptDomain struct {
	rung int
	d    rawDomain
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

// attach removes CPU id's degenerate domains (cpu_attach_domain) and returns
// the others, innermost first.
func (b *builder) attach(id int) []keptDomain {
	var chain []keptDomain
	for ri, d := range b.raw[id] {
		chain = append(chain, keptDomain{ri, d})
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
	return chain
}
