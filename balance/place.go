package balance

import "github.com/numasteal/numasteal/topology/domains"

// Place is find_idlest_cpu: from the highest domain of from that balances
// on fork (or exec), find the idlest group; if it is not the local one,
// move to its idlest CPU and continue from that CPU's domain one size
// smaller; otherwise descend a level. An unknown from starts at the first
// bound CPU.
func (b *hierBalancer) Place(from int, kind PlaceKind, load Load) int {
	m := b.m
	if m.pos(from) < 0 {
		from = m.cpus[0]
	}
	flag := domains.FlagBalanceFork
	if kind == PlaceExec {
		flag = domains.FlagBalanceExec
	}
	cpu := from
	steps := m.steps[m.pos(cpu)]
	i := len(steps) - 1
	for i >= 0 {
		st := &steps[i]
		if st.params.Flags&flag == 0 {
			i--
			continue
		}
		g := findIdlestGroup(st, load)
		if g < 0 {
			i--
			continue
		}
		nc := idlestCPU(st.groups[g], load)
		if nc == cpu {
			i--
			continue
		}
		// Now balance at a lower level of the new CPU.
		weight := st.weight
		cpu = nc
		steps = m.steps[m.pos(cpu)]
		i = -1
		for j := range steps {
			if steps[j].weight >= weight {
				break
			}
			if steps[j].params.Flags&flag != 0 {
				i = j
			}
		}
	}
	return cpu
}

// findIdlestGroup returns the index of the group a new task should go to,
// or -1 to stay in the local group (find_idlest_group). The local group
// keeps the task unless its average load exceeds the idlest group's by
// more than half the imbalance margin (imbalance_scale = 100 +
// (imbalance_pct-100)/2); at a NUMA level it also keeps it while it has an
// idle CPU (group_has_spare with the NUMA imbalance allowance).
func findIdlestGroup(st *step, load Load) int {
	local, localIdle := groupStats(st.groups[0], load)
	if st.remote && localIdle > 0 {
		return -1
	}
	idlest, min, minIdle := -1, int64(0), 0
	for gi := 1; gi < len(st.groups); gi++ {
		avg, idle := groupStats(st.groups[gi], load)
		if idlest < 0 || avg < min || (avg == min && idle > minIdle) {
			idlest, min, minIdle = gi, avg, idle
		}
	}
	if idlest < 0 {
		return -1
	}
	scale := int64(100 + (st.params.ImbalancePct-100)/2)
	if 100*local <= scale*min {
		return -1
	}
	return idlest
}

// groupStats returns g's average instantaneous load and its idle CPUs.
func groupStats(g []int, load Load) (avg int64, idle int) {
	var sum int64
	for _, c := range g {
		l := cpuLoad(load, c)
		if l == 0 {
			idle++
		}
		sum += l
	}
	return sum / int64(len(g)), idle
}

// idlestCPU is find_idlest_group_cpu: an idle CPU if any, else the least
// loaded; ties go to the first in the group.
func idlestCPU(g []int, load Load) int {
	best, bl := g[0], int64(-1)
	for _, c := range g {
		l := cpuLoad(load, c)
		if bl < 0 || l < bl {
			best, bl = c, l
			if l == 0 {
				break
			}
		}
	}
	return best
}
