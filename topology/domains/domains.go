// The result of Build: levels, each CPU's chain of domains, and the
// lookups the balancer makes on them.

package domains

import "github.com/numasteal/numasteal/topology/cpuset"

// LevelName names a scheduling-domain level, innermost first. The names
// follow Linux's default_topology[] (SMT, CLS, MC, PKG/DIE) spelled out, plus
// the NUMA levels sched_init_numa adds.
type LevelName string

// The levels, innermost first.
const (
	SMT     LevelName = "SMT"     // hardware threads of one core
	Cluster LevelName = "CLUSTER" // cores sharing an L2 or a cluster id
	LLC     LevelName = "LLC"     // CPUs sharing the last-level cache (Linux "MC")
	Die     LevelName = "DIE"     // one die
	Package LevelName = "PACKAGE" // one package (socket)
	Node    LevelName = "NODE"    // one NUMA node
	NUMA    LevelName = "NUMA"    // nodes within one NUMA distance
	Machine LevelName = "MACHINE" // every usable CPU
)

// Level is one level of the domain hierarchy.
type Level struct {
	// Name is the level's name; NUMA names every NUMA level, told apart by
	// Distance.
	Name LevelName
	// Depth is the position in Domains.Levels (0 = innermost).
	Depth int
	// Distance is the NUMA distance the level reaches (NUMA levels only;
	// the node distance of NODE is the local distance, 10; 0 elsewhere).
	Distance int
	// Spans are the distinct spans of the level's domains, sorted by first
	// CPU (then by their members). Below NUMA they are disjoint; NUMA
	// spans may overlap, exactly as in Linux. A CPU whose domain at this
	// level was degenerate (say the one usable thread of a core at SMT)
	// has no domain here, so the spans need not cover every usable CPU.
	Spans []cpuset.Set
	// Params are the parameters of the level's widest domain; each Domain
	// carries its own (they differ in the span-derived numbers when spans
	// differ in size, and in FlagAsymCapacity). Params.Flags has
	// FlagAsymCapacity when any domain of the level has it.
	Params Params
}

// SpanIDs returns Spans as lists of CPU ids (never nil), for printing and
// JSON.
func (l *Level) SpanIDs() [][]int {
	out := make([][]int, 0, len(l.Spans))
	for _, s := range l.Spans {
		out = append(out, s.IDs())
	}
	return out
}

// Domain is one CPU's domain at one level: the CPUs it spans and its groups,
// the spans of the child level that together cover it (Linux's sched_group
// ring), the CPU's own group first.
type Domain struct {
	// Level is the level the domain belongs to.
	Level *Level
	// Span is the set of CPUs the domain balances across, the CPU included.
	Span cpuset.Set
	// Groups cover Span, the CPU's own group first; on NUMA levels they
	// may overlap.
	Groups []cpuset.Set
	// Params are this domain's parameters (sd_init on this CPU's span).
	Params Params
}

// Domains is the whole hierarchy for a topology's usable CPUs.
type Domains struct {
	// Levels are the levels, innermost first; a level whose every span
	// equals its child's was dropped (Linux's sd_degenerate).
	Levels []*Level
	// CPUs are the usable CPUs the hierarchy was built over.
	CPUs cpuset.Set
	// NUMADistances are the distinct node distances between nodes with
	// usable CPUs, ascending, local distance first: Linux's
	// sched_domains_numa_distance[]. Nil without a distance table.
	NUMADistances []int
	// Notes records departures from the input the builder had to make
	// (spans widened or clipped, levels skipped), one line each.
	Notes []string
	// chains[cpu] is that CPU's domains, innermost first.
	chains map[int][]Domain
}

// Chain returns cpu's domains, innermost first, or nil for a CPU that is not
// usable. A machine with a single usable CPU has no domains at all, as in
// Linux (every domain of one CPU is degenerate). The slice must not be
// modified.
func (d *Domains) Chain(cpu int) []Domain { return d.chains[cpu] }

// Highest returns cpu's outermost domain whose flags include all of f, the
// way highest_flag_domain finds sd_llc (f = FlagShareLLC); nil when none has.
func (d *Domains) Highest(cpu int, f Flags) *Domain {
	chain := d.chains[cpu]
	for i := len(chain) - 1; i >= 0; i-- {
		if chain[i].Params.Flags&f == f {
			return &chain[i]
		}
	}
	return nil
}

// Lowest returns cpu's innermost domain whose flags include all of f, the
// way lowest_flag_domain finds sd_numa (f = FlagNUMA); nil when none has.
func (d *Domains) Lowest(cpu int, f Flags) *Domain {
	chain := d.chains[cpu]
	for i := range chain {
		if chain[i].Params.Flags&f == f {
			return &chain[i]
		}
	}
	return nil
}
