package balance

import (
	"sync/atomic"

	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
	"github.com/numasteal/numasteal/topology/domains"
)

// Flat ignores the topology: an idle CPU tries every other CPU in a random
// order and takes half of the first non-empty queue it finds, and a new
// task lands on a random CPU. This is how the Go runtime (findRunnable's
// stealWork: random start, runqsteal takes half) and Tokio (steal_work
// from a random sibling, steal_into takes half) balance.
type Flat struct{}

// Name returns "flat".
func (Flat) Name() string { return "flat" }

// Bind prepares the policy for cpus of topo.
func (Flat) Bind(topo *topology.Topology, doms *domains.Domains, cpus cpuset.Set, seed uint64) (Balancer, error) {
	m, err := newMachine(topo, doms, cpus)
	if err != nil {
		return nil, err
	}
	b := &flatBalancer{m: m, seed: seed, thieves: make([]flatThief, len(m.cpus))}
	for i, c := range m.cpus {
		b.thieves[i] = flatThief{m: m, cpu: c, pos: i, rng: newRNG(seed, c)}
	}
	return b, nil
}

type flatBalancer struct {
	m       *machine
	seed    uint64
	seq     atomic.Uint64
	thieves []flatThief
}

// Place returns a random bound CPU, as a global run queue would hand the
// task to whichever CPU looks first.
func (b *flatBalancer) Place(from int, kind PlaceKind, load Load) int {
	x := splitmix(b.seed ^ b.seq.Add(1))
	return b.m.cpus[x%uint64(len(b.m.cpus))]
}

func (b *flatBalancer) Thief(cpu int) Thief {
	if p := b.m.pos(cpu); p >= 0 {
		return &b.thieves[p]
	}
	return nil
}

func (b *flatBalancer) MaxVictims() int { return len(b.m.cpus) }

type flatThief struct {
	m   *machine
	cpu int
	pos int
	rng rng
}

func (t *flatThief) Steps() int { return 1 }

// stealAll is the "half of the queue" amount: StealHalf bounds it.
const stealAll = 1 << 30

func (t *flatThief) Victims(buf []Victim, _ int, load Load, s Search) []Victim {
	if s.Mode == Busy {
		return buf // no periodic balancing: only idle CPUs steal
	}
	n := len(t.m.cpus)
	off := int(t.rng.next() % uint64(n))
	for k := range n {
		c := t.m.cpus[(off+k)%n]
		if c != t.cpu {
			buf = append(buf, Victim{CPU: c, Level: t.m.levelOf(t.pos, c), Max: stealAll})
		}
	}
	return buf
}

func (t *flatThief) Done(int, int, Search) {}

func (t *flatThief) MayMigrate(int, int64) bool { return true }
