package balance

import (
	"fmt"

	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
	"github.com/numasteal/numasteal/topology/domains"
)

// machine is the read-only view of the bound CPUs that every policy
// shares: per CPU its domain chain, reduced to the bound CPUs.
type machine struct {
	cpus  []int   // bound CPUs, ascending
	index []int32 // CPU id -> position in cpus, -1 when not bound
	node  []int   // by position: NUMA node (-1 unknown)
	steps [][]step
}

// step is one domain of one CPU's chain, reduced to the bound CPUs.
type step struct {
	depth  int // domains.Level.Depth
	params domains.Params
	span   cpuset.Set
	weight int     // bound CPUs in span
	groups [][]int // bound CPUs of each group, the CPU's own group first (never empty)
	added  []int   // bound CPUs this step adds to the one below (the victims it adds)
	remote bool    // crosses NUMA nodes (SD_NUMA, or a MACHINE span over several nodes)
	hops   int     // steps beyond the LLC up to and including this one
}

// newMachine builds the tables for cpus, which must be usable CPUs of doms.
func newMachine(topo *topology.Topology, doms *domains.Domains, cpus cpuset.Set) (*machine, error) {
	if topo == nil || doms == nil {
		return nil, fmt.Errorf("balance: bind: nil topology or domains")
	}
	if cpus.IsEmpty() {
		cpus = doms.CPUs
	}
	if cpus.IsEmpty() {
		return nil, fmt.Errorf("balance: bind: no CPU to balance")
	}
	m := &machine{cpus: cpus.IDs()}
	m.index = make([]int32, cpus.Last()+1)
	for i := range m.index {
		m.index[i] = -1
	}
	for i, c := range m.cpus {
		m.index[c] = int32(i)
		m.node = append(m.node, topo.NodeOf(c))
	}
	lists := map[string][]int{} // span -> bound CPUs, shared between CPUs
	list := func(s cpuset.Set) []int {
		s = s.Intersect(cpus)
		k := s.String()
		if l, ok := lists[k]; ok {
			return l
		}
		l := s.IDs()
		lists[k] = l
		return l
	}
	m.steps = make([][]step, len(m.cpus))
	for i, c := range m.cpus {
		seen := cpuset.Of(c)
		hops := 0
		for _, d := range doms.Chain(c) {
			st := step{depth: d.Level.Depth, params: d.Params, span: d.Span.Intersect(cpus)}
			st.weight = st.span.Len()
			if st.weight <= seen.Len() {
				continue // adds no bound CPU
			}
			for _, g := range d.Groups {
				if l := list(g); len(l) > 0 {
					st.groups = append(st.groups, l)
				}
			}
			own := -1
			for j, g := range st.groups {
				if contains(g, c) {
					own = j
					break
				}
			}
			switch {
			case own < 0:
				st.groups = append([][]int{{c}}, st.groups...)
			case own > 0:
				st.groups[0], st.groups[own] = st.groups[own], st.groups[0]
			}
			st.added = st.span.Difference(seen).IDs()
			seen = seen.Union(st.span)
			st.remote = d.Params.Flags&domains.FlagNUMA != 0 || m.spansNodes(st.span, topo)
			if d.Params.Flags&domains.FlagShareLLC == 0 {
				hops++
			}
			st.hops = hops
			m.steps[i] = append(m.steps[i], st)
		}
		// Bound CPUs outside every domain of c (domains built for other
		// CPUs): one last remote step over all of them.
		if rest := cpus.Difference(seen); !rest.IsEmpty() {
			depth := 0
			if n := len(doms.Levels); n > 0 {
				depth = n - 1
			}
			hops++
			m.steps[i] = append(m.steps[i], step{
				depth: depth, span: cpus, weight: cpus.Len(),
				groups: [][]int{list(seen), rest.IDs()}, added: rest.IDs(),
				remote: true, hops: hops,
				params: domains.Params{ImbalancePct: 125, MinIntervalMs: cpus.Len(), MaxIntervalMs: 2 * cpus.Len(),
					BusyFactor: 16, CacheNiceTries: 2, Flags: domains.FlagBalanceNewIdle | domains.FlagNUMA},
			})
		}
	}
	return m, nil
}

func (m *machine) spansNodes(s cpuset.Set, topo *topology.Topology) bool {
	first := -2
	for c := range s.All() {
		n := topo.NodeOf(c)
		if first == -2 {
			first = n
		} else if n != first {
			return true
		}
	}
	return false
}

// pos returns cpu's position in m.cpus, or -1.
func (m *machine) pos(cpu int) int {
	if cpu < 0 || cpu >= len(m.index) {
		return -1
	}
	return int(m.index[cpu])
}

// levelOf returns the depth of the innermost step of thief (a position)
// whose span holds cpu.
func (m *machine) levelOf(thief, cpu int) int {
	steps := m.steps[thief]
	for i := range steps {
		if steps[i].span.Contains(cpu) {
			return steps[i].depth
		}
	}
	if len(steps) > 0 {
		return steps[len(steps)-1].depth
	}
	return 0
}

func contains(l []int, c int) bool {
	for _, x := range l {
		if x == c {
			return true
		}
	}
	return false
}

// cpuLoad is a CPU's instantaneous load in the units of the smoothing,
// nr_running * 128 (nr_running counts the running task and the queued ones).
func cpuLoad(load Load, cpu int) int64 {
	n := int64(load.Queued(cpu))
	if load.Running(cpu) {
		n++
	}
	return n * loadScale
}

// loadScale is the load of one runnable task, 128: the unit the loads are
// smoothed and compared in (Linux's SCHED_LOAD_SCALE was 1024, and its
// cpu_load[] decayed the same way).
const loadScale = 128

// isIdle reports whether cpu runs nothing and has nothing queued.
func isIdle(load Load, cpu int) bool { return !load.Running(cpu) && load.Queued(cpu) == 0 }

// rng is xorshift64*, owned by one goroutine.
type rng uint64

func newRNG(seed uint64, cpu int) rng {
	s := rng(seed*0x9E3779B97F4A7C15 + uint64(cpu+1)*0xBF58476D1CE4E5B9 + 1)
	if s == 0 {
		s = 1
	}
	return s
}

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	*r = rng(x)
	return x * 2685821657736338717
}

// splitmix hashes a counter into a random-looking number (for Place, which
// must be safe for concurrent use and so keeps no generator state).
func splitmix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}
