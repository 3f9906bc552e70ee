// Build: checks and indexes the topology, runs the five steps, and
// assembles the Domains.

package domains

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// Build builds the scheduling-domain hierarchy of t's usable CPUs, as
// Linux's build_sched_domains would for a root domain of those CPUs, in the
// five steps of the package documentation. t is only read.
//
// It fails only on a Topology that contradicts itself (nil, no usable CPU, a
// usable CPU missing from CPUs, an index out of range, a distance matrix of
// the wrong shape); oddities of real machines are handled and recorded in
// Domains.Notes.
func Build(t *topology.Topology) (*Domains, error) {
	b, err := newBuilder(t)
	if err != nil {
		return nil, err
	}
	b.initNUMA()             // step 1: the NUMA distances (numa.go)
	b.initRungs()            // step 1: the ladder (ladder.go)
	b.buildSpans()           // step 2: spans (spans.go)
	b.buildParams()          // step 3: parameters (params.go)
	b.buildGroups()          // step 4: groups (groups.go)
	return b.assemble(), nil // step 5: degenerate domains (degenerate.go)
}

// rawDomain is one CPU's domain at one rung before degenerate domains are
// removed.
type rawDomain struct {
	span   cpuset.Set
	groups []cpuset.Set
	params Params
}

// builder holds the state of one Build call.
type builder struct {
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

// newBuilder checks t and indexes it.
func newBuilder(t *topology.Topology) (*builder, error) {
	if t == nil {
		return nil, errors.New("domains: Build: nil Topology")
	}
	if t.Usable.IsEmpty() {
		return nil, errors.New("domains: Build: no usable CPUs")
	}
	b := &builder{
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
func (b *builder) note(key, format string, args ...any) {
	if b.noted[key] {
		return
	}
	b.noted[key] = true
	b.notes = append(b.notes, fmt.Sprintf(format, args...))
}

// findLLCs finds each usable CPU's last-level cache: the highest-level data
// or unified cache that holds it (what cacheinfo's cpu_coregroup_mask /
// llc_shared_map use on x86 and arm64).
func (b *builder) findLLCs() {
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

// assemble removes every CPU's degenerate domains (step 5) and assembles the
// result: the levels some CPU keeps, renumbered innermost first, each with
// its distinct spans and the parameters of its widest domain.
func (b *builder) assemble() *Domains {
	chains := make(map[int][]keptDomain, len(b.ids))
	used := make([]bool, len(b.rungs))
	for _, id := range b.ids {
		chain := b.attach(id)
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
