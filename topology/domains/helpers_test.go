package domains

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// synthCPU places one CPU of a synthetic machine.
type synthCPU struct {
	id, pkg, die, cluster, core, node, capacity int
}

// synthMachine describes a synthetic Topology: CPUs, caches (level -> cpulists),
// and the distance table.
type synthMachine struct {
	cpus   []synthCPU
	llc    []string // cpulists of the last-level caches (L3)
	l2     []string // cpulists of the L2 caches
	nodes  []int    // node ids of the table (and of Topology.Nodes)
	matrix [][]int  // nil: no distance table
	amdZen bool
}

// synthGrid lays out pkgs packages of cores cores of threads threads, numbering
// CPUs package by package, core by core; node(pkg, core) places each core.
func synthGrid(pkgs, cores, threads int, node func(pkg, core int) int) []synthCPU {
	var out []synthCPU
	for p := range pkgs {
		for c := range cores {
			for th := range threads {
				id := (p*cores+c)*threads + th
				core := p*cores + c
				out = append(out, synthCPU{id: id, pkg: p, die: p, cluster: core, core: core, node: node(p, core)})
			}
		}
	}
	return out
}

// build turns m into a Topology the way Discover would fill one in.
func (m synthMachine) build(tb testing.TB) *topology.Topology {
	tb.Helper()
	t := &topology.Topology{Root: "synthetic"}
	groups := func(key func(a synthCPU) int) ([]topology.Group, map[int]int) {
		idx := map[int]int{}
		var gs []topology.Group
		for _, a := range m.cpus {
			k := key(a)
			i, ok := idx[k]
			if !ok {
				i = len(gs)
				idx[k] = i
				gs = append(gs, topology.Group{Index: i, ID: k})
			}
			gs[i].CPUs.Add(a.id)
		}
		return gs, idx
	}
	var pi, di, ci, ki map[int]int
	t.Packages, pi = groups(func(a synthCPU) int { return a.pkg })
	t.Dies, di = groups(func(a synthCPU) int { return a.die })
	t.Clusters, ci = groups(func(a synthCPU) int { return a.cluster })
	t.Cores, ki = groups(func(a synthCPU) int { return a.core })
	nodeCPUs := map[int]cpuset.Set{}
	for _, a := range m.cpus {
		t.Online.Add(a.id)
		kind := -1
		t.CPUs = append(t.CPUs, topology.CPU{
			ID: a.id, Package: pi[a.pkg], Die: di[a.die], Cluster: ci[a.cluster], Core: ki[a.core],
			PackageID: a.pkg, DieID: a.die, ClusterID: a.cluster, CoreID: a.core,
			Node: a.node, Capacity: a.capacity, Kind: kind, Usable: true,
		})
		if a.node >= 0 {
			s := nodeCPUs[a.node]
			s.Add(a.id)
			nodeCPUs[a.node] = s
		}
	}
	slices.SortFunc(t.CPUs, func(a, b topology.CPU) int { return a.ID - b.ID })
	t.Usable = t.Online.Clone()
	t.Allowed = t.Online.Clone()
	for level, lists := range map[int][]string{3: m.llc, 2: m.l2} {
		for _, l := range lists {
			s, err := cpuset.Parse(l)
			if err != nil {
				tb.Fatal(err)
			}
			t.Caches = append(t.Caches, topology.Cache{Level: level, Type: topology.Unified, CPUs: s})
		}
	}
	for _, n := range m.nodes {
		t.Nodes = append(t.Nodes, topology.Node{ID: n, CPUs: nodeCPUs[n], Usable: nodeCPUs[n]})
	}
	if m.matrix != nil {
		t.Distances = &topology.Distances{Nodes: m.nodes, Matrix: m.matrix}
	}
	if m.amdZen {
		t.CPUInfo = topology.CPUInfo{Vendor: "AuthenticAMD", Family: 0x19}
	}
	return t
}

// synthNodeEvery places perNode cores in each node, in core order.
func synthNodeEvery(perNode int) func(pkg, core int) int {
	return func(_, core int) int { return core / perNode }
}

// levelSummary is a Level in one comparable line: "NAME[/distance] spans".
func levelSummary(l *Level) string {
	var spans []string
	for _, s := range l.Spans {
		spans = append(spans, "{"+s.String()+"}")
	}
	name := string(l.Name)
	if l.Name == NUMA {
		name = fmt.Sprintf("NUMA/%d", l.Distance)
	}
	return name + " " + strings.Join(spans, "")
}

// levelsSummary returns the levels, one line each.
func levelsSummary(d *Domains) []string {
	var out []string
	for _, l := range d.Levels {
		out = append(out, levelSummary(l))
	}
	return out
}

// groupSummary is a Domain's groups as "{a}{b}".
func groupSummary(d Domain) string {
	var b strings.Builder
	for _, g := range d.Groups {
		b.WriteString("{" + g.String() + "}")
	}
	return b.String()
}

// shape is a Level in short: "NAME[/distance] N×W", N spans of W CPUs (W
// lists the distinct weights when they differ).
func shape(l *Level) string {
	var ws []int
	for _, s := range l.Spans {
		if w := s.Len(); !slices.Contains(ws, w) {
			ws = append(ws, w)
		}
	}
	slices.Sort(ws)
	name := string(l.Name)
	if l.Name == NUMA {
		name = fmt.Sprintf("NUMA/%d", l.Distance)
	}
	w := strings.Trim(strings.ReplaceAll(fmt.Sprint(ws), " ", ","), "[]")
	return fmt.Sprintf("%s %d×%s", name, len(l.Spans), w)
}

// checkDomains asserts the properties every hierarchy must have, whatever
// the machine.
func checkDomains(tb testing.TB, top *topology.Topology, d *Domains) {
	tb.Helper()
	if !d.CPUs.Equal(top.Usable) {
		tb.Errorf("Domains.CPUs = %s, want the usable CPUs %s", d.CPUs, top.Usable)
	}
	for i, l := range d.Levels {
		if l.Depth != i {
			tb.Errorf("level %s: Depth %d at position %d", l.Name, l.Depth, i)
		}
		if len(l.Spans) == 0 {
			tb.Errorf("level %s has no spans", l.Name)
		}
		if l.Params.Flags&FlagNUMA == 0 {
			for a := range l.Spans {
				for b := a + 1; b < len(l.Spans); b++ {
					if l.Spans[a].Intersects(l.Spans[b]) {
						tb.Errorf("level %s: spans %s and %s overlap", l.Name, l.Spans[a], l.Spans[b])
					}
				}
			}
		}
	}
	for cpu := range top.Usable.All() {
		chain := d.Chain(cpu)
		if top.Usable.Len() == 1 {
			if len(chain) != 0 {
				tb.Errorf("CPU %d: a single CPU has %d domains, want none", cpu, len(chain))
			}
			continue
		}
		if len(chain) == 0 {
			tb.Errorf("CPU %d has no domains", cpu)
			continue
		}
		if top := chain[len(chain)-1].Span; !top.Equal(d.CPUs) {
			tb.Errorf("CPU %d: outermost span %s, want every usable CPU %s", cpu, top, d.CPUs)
		}
		for i, dom := range chain {
			name := fmt.Sprintf("CPU %d %s", cpu, dom.Level.Name)
			if !dom.Span.Contains(cpu) {
				tb.Errorf("%s: span %s lacks the CPU", name, dom.Span)
			}
			if !dom.Span.IsSubsetOf(d.CPUs) {
				tb.Errorf("%s: span %s has unusable CPUs", name, dom.Span)
			}
			if !slices.ContainsFunc(dom.Level.Spans, dom.Span.Equal) {
				tb.Errorf("%s: span %s missing from the level's spans", name, dom.Span)
			}
			if i > 0 {
				prev := chain[i-1]
				if prev.Level.Depth >= dom.Level.Depth {
					tb.Errorf("%s: level depth %d after %d", name, dom.Level.Depth, prev.Level.Depth)
				}
				if !prev.Span.IsSubsetOf(dom.Span) || prev.Span.Equal(dom.Span) {
					tb.Errorf("%s: span %s does not strictly grow from %s", name, dom.Span, prev.Span)
				}
			}
			if dom.Span.Len() < 2 {
				tb.Errorf("%s: degenerate span %s kept", name, dom.Span)
			}
			if len(dom.Groups) == 0 || !dom.Groups[0].Contains(cpu) {
				tb.Errorf("%s: first group of %s does not hold the CPU", name, groupSummary(dom))
				continue
			}
			var cover cpuset.Set
			for gi, g := range dom.Groups {
				if g.IsEmpty() || !g.IsSubsetOf(dom.Span) {
					tb.Errorf("%s: group %s not a non-empty subset of span %s", name, g, dom.Span)
				}
				if dom.Params.Flags&FlagOverlap == 0 && cover.Intersects(g) {
					tb.Errorf("%s: groups %s overlap on a non-NUMA level", name, groupSummary(dom))
				}
				if gi == 0 && i > 0 && !g.Equal(chain[i-1].Span) {
					tb.Errorf("%s: own group %s is not the child span %s", name, g, chain[i-1].Span)
				}
				cover = cover.Union(g)
			}
			if !cover.Equal(dom.Span) {
				tb.Errorf("%s: groups %s cover %s, not the span %s", name, groupSummary(dom), cover, dom.Span)
			}
			p := dom.Params
			if p.MinIntervalMs != dom.Span.Len() || p.MaxIntervalMs != 2*dom.Span.Len() || p.BusyFactor != sdBusyFactor {
				tb.Errorf("%s: intervals %d/%d busy %d for span weight %d", name, p.MinIntervalMs, p.MaxIntervalMs, p.BusyFactor, dom.Span.Len())
			}
		}
	}
}
