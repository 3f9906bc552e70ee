package balance

import (
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
	"github.com/numasteal/numasteal/topology/domains"
)

// Local never leaves the node: an idle CPU tries the CPUs of its own node,
// nearest domain first and in a random order inside each, taking half of
// the first non-empty queue; a new task goes to the idlest CPU of the
// submitter's node. Its one exception keeps work from being stranded: on
// the Final pass before sleeping it also takes work queued on a CPU of
// another node that runs nothing (whose owner is asleep).
type Local struct{}

// Name returns "local".
func (Local) Name() string { return "local" }

// Bind prepares the policy for cpus of topo.
func (Local) Bind(topo *topology.Topology, doms *domains.Domains, cpus cpuset.Set, seed uint64) (Balancer, error) {
	m, err := newMachine(topo, doms, cpus)
	if err != nil {
		return nil, err
	}
	b := &localBalancer{m: m, thieves: make([]localThief, len(m.cpus)), nodes: map[int][]int{}}
	for i, c := range m.cpus {
		b.nodes[m.node[i]] = append(b.nodes[m.node[i]], c)
	}
	for i, c := range m.cpus {
		t := &b.thieves[i]
		*t = localThief{b: b, cpu: c, rng: newRNG(seed, c)}
		seen := cpuset.Of(c)
		node := cpuset.Of(b.nodes[m.node[i]]...)
		for _, st := range m.steps[i] {
			if !st.span.IsSubsetOf(node) {
				break
			}
			t.levels = append(t.levels, st.added)
			t.depths = append(t.depths, st.depth)
			seen = seen.Union(st.span)
		}
		if rest := node.Difference(seen); !rest.IsEmpty() {
			// Node CPUs the chain reaches only above the node.
			d := 0
			if len(t.depths) > 0 {
				d = t.depths[len(t.depths)-1]
			} else if len(m.steps[i]) > 0 {
				d = m.steps[i][0].depth
			}
			t.levels = append(t.levels, rest.IDs())
			t.depths = append(t.depths, d)
		}
	}
	return b, nil
}

type localBalancer struct {
	m       *machine
	nodes   map[int][]int // node -> bound CPUs; read-only after Bind
	thieves []localThief
}

// Place returns the idlest CPU of from's node (from itself when idle).
func (b *localBalancer) Place(from int, kind PlaceKind, load Load) int {
	p := b.m.pos(from)
	if p < 0 {
		from, p = b.m.cpus[0], 0
	}
	if isIdle(load, from) {
		return from
	}
	return idlestCPU(b.nodes[b.m.node[p]], load)
}

func (b *localBalancer) Thief(cpu int) Thief {
	if p := b.m.pos(cpu); p >= 0 {
		return &b.thieves[p]
	}
	return nil
}

func (b *localBalancer) MaxVictims() int { return len(b.m.cpus) }

type localThief struct {
	b      *localBalancer
	cpu    int
	levels [][]int // CPUs each step adds, inside the node
	depths []int
	rng    rng
}

// Steps counts the node's levels plus the rescue step of the Final pass.
func (t *localThief) Steps() int { return len(t.levels) + 1 }

func (t *localThief) Victims(buf []Victim, i int, load Load, s Search) []Victim {
	if s.Mode == Busy {
		return buf // no periodic balancing: only idle CPUs steal
	}
	if i < len(t.levels) {
		vs := t.levels[i]
		off := int(t.rng.next() % uint64(len(vs)))
		for k := range vs {
			buf = append(buf, Victim{CPU: vs[(off+k)%len(vs)], Level: t.depths[i], Max: stealAll})
		}
		return buf
	}
	if !s.Final {
		return buf
	}
	m := t.b.m
	me := m.pos(t.cpu)
	for _, c := range m.cpus {
		if m.node[m.pos(c)] != m.node[me] && load.Queued(c) > 0 && !load.Running(c) {
			buf = append(buf, Victim{CPU: c, Level: m.levelOf(me, c), Max: 1})
		}
	}
	return buf
}

func (t *localThief) Done(int, int, Search) {}

func (t *localThief) MayMigrate(int, int64) bool { return true }
