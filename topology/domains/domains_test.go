package domains

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/internal/corpus"
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

// groupSummary is a Domain's groups as "{a}{b}".
func groupSummary(d Domain) string {
	var b strings.Builder
	for _, g := range d.Groups {
		b.WriteString("{" + g.String() + "}")
	}
	return b.String()
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

// levelsSummary returns the levels, one line each.
func levelsSummary(d *Domains) []string {
	var out []string
	for _, l := range d.Levels {
		out = append(out, levelSummary(l))
	}
	return out
}

func synthNodeEvery(perNode int) func(pkg, core int) int {
	return func(_, core int) int { return core / perNode }
}

func TestBuildLevels(t *testing.T) {
	ring := [][]int{{10, 20, 30, 20}, {20, 10, 20, 30}, {30, 20, 10, 20}, {20, 30, 20, 10}}
	tests := []struct {
		name  string
		m     synthMachine
		want  []string
		notes []string // substrings, one per expected note
	}{{
		name: "2 packages x 2 cores x 2 threads, one node, L3 per package",
		m: synthMachine{
			cpus:  synthGrid(2, 2, 2, func(int, int) int { return 0 }),
			llc:   []string{"0-3", "4-7"},
			nodes: []int{0}, matrix: [][]int{{10}},
		},
		// PACKAGE = LLC and is dropped; NODE spans the machine.
		want: []string{"SMT {0-1}{2-3}{4-5}{6-7}", "LLC {0-3}{4-7}", "NODE {0-7}"},
	}, {
		name: "8 sockets = 8 nodes, 10/20, LLC per core (16amd64-8n2c)",
		m: synthMachine{
			cpus:  synthGrid(8, 2, 1, func(p, _ int) int { return p }),
			l2:    []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15"},
			nodes: []int{0, 1, 2, 3, 4, 5, 6, 7},
			matrix: func() [][]int {
				m := make([][]int, 8)
				for i := range m {
					m[i] = make([]int, 8)
					for j := range m[i] {
						m[i][j] = 20
					}
					m[i][i] = 10
				}
				return m
			}(),
		},
		want: []string{"PACKAGE {0-1}{2-3}{4-5}{6-7}{8-9}{10-11}{12-13}{14-15}", "NUMA/20 {0-15}"},
	}, {
		name: "4-node ring 10/20/30 (topology.c comment), one CPU per node",
		m: synthMachine{
			cpus:  synthGrid(4, 1, 1, func(p, _ int) int { return p }),
			nodes: []int{0, 1, 2, 3}, matrix: ring,
		},
		want: []string{"NUMA/20 {0-2}{0-1,3}{0,2-3}{1-3}", "NUMA/30 {0-3}"},
	}, {
		name: "Magny-Cours: 2 nodes per package, L3 per node, 10/16/22",
		m: synthMachine{
			cpus:  synthGrid(2, 4, 1, synthNodeEvery(2)),
			llc:   []string{"0-1", "2-3", "4-5", "6-7"},
			nodes: []int{0, 1, 2, 3},
			matrix: [][]int{
				{10, 16, 22, 22}, {16, 10, 22, 22}, {22, 22, 10, 16}, {22, 22, 16, 10},
			},
		},
		want:  []string{"LLC {0-1}{2-3}{4-5}{6-7}", "NUMA/16 {0-3}{4-7}", "NUMA/22 {0-7}"},
		notes: []string{"PACKAGE span 0-3 of CPU 0 crosses NUMA nodes"},
	}, {
		name: "Sub-NUMA clustering: L3 shared by two interleaved nodes",
		m: synthMachine{
			cpus:  synthGrid(1, 4, 1, func(_, core int) int { return core % 2 }),
			llc:   []string{"0-3"},
			nodes: []int{0, 1}, matrix: [][]int{{10, 11}, {11, 10}},
		},
		want:  []string{"LLC {0,2}{1,3}", "NUMA/11 {0-3}"},
		notes: []string{"LLC span 0-3 of CPU 0 crosses its NUMA node; clipped", "PACKAGE span 0-3 of CPU 0 crosses NUMA nodes"},
	}, {
		name: "CPUs in no online node meet the others at MACHINE",
		m: synthMachine{
			cpus:  synthGrid(2, 2, 1, func(p, _ int) int { return []int{0, -1}[p] }),
			nodes: []int{0}, matrix: [][]int{{10}},
		},
		want: []string{"PACKAGE {0-1}{2-3}", "MACHINE {0-3}"},
	}, {
		name: "two nodes without a distance table",
		m: synthMachine{
			cpus:  synthGrid(2, 2, 1, func(p, _ int) int { return p }),
			nodes: []int{0, 1},
		},
		want: []string{"PACKAGE {0-1}{2-3}", "MACHINE {0-3}"},
	}, {
		name: "CPU-less node 2 adds no level of its own",
		m: synthMachine{
			cpus:  synthGrid(2, 2, 1, func(p, _ int) int { return p }),
			nodes: []int{0, 1, 2},
			matrix: [][]int{
				{10, 20, 17}, {20, 10, 17}, {17, 17, 10},
			},
		},
		want: []string{"PACKAGE {0-1}{2-3}", "NUMA/20 {0-3}"},
	}, {
		name: "distance out of range: no NUMA levels (sched_numa_warn)",
		m: synthMachine{
			cpus:  synthGrid(2, 2, 1, func(p, _ int) int { return p }),
			nodes: []int{0, 1}, matrix: [][]int{{10, 5}, {5, 10}},
		},
		want:  []string{"PACKAGE {0-1}{2-3}", "MACHINE {0-3}"},
		notes: []string{"distance 5 from node 0 to node 1 is outside 10..255"},
	}, {
		name: "partially overlapping L3s are not a level (topology_span_sane)",
		m: synthMachine{
			cpus:  synthGrid(1, 4, 1, func(int, int) int { return 0 }),
			llc:   []string{"0-2", "1-3"},
			l2:    []string{"0-1", "2-3"},
			nodes: []int{0}, matrix: [][]int{{10}},
		},
		want:  []string{"PACKAGE {0-3}"},
		notes: []string{"LLC spans overlap partially"},
	}, {
		name: "a cluster as wide as the LLC is not a level (cpu_clustergroup_mask)",
		m: synthMachine{
			cpus: func() []synthCPU {
				cs := synthGrid(1, 4, 1, func(int, int) int { return 0 })
				for i := range cs {
					cs[i].cluster = i / 2
				}
				return cs
			}(),
			l2: []string{"0-1", "2-3"},
		},
		want: []string{"LLC {0-1}{2-3}", "PACKAGE {0-3}"},
	}, {
		name: "a die narrower than the LLC is widened (build_sched_domain fix-up)",
		m: synthMachine{
			cpus: func() []synthCPU {
				cs := synthGrid(2, 4, 1, func(int, int) int { return 0 })
				for i := range cs {
					cs[i].die = i / 2
				}
				return cs
			}(),
			llc: []string{"0-3", "4-7"},
		},
		want:  []string{"LLC {0-3}{4-7}", "NODE {0-7}"},
		notes: []string{"DIE span 0-1 of CPU 0 does not contain the span below it, 0-3; widened"},
	}, {
		name: "one CPU: no domains at all",
		m:    synthMachine{cpus: synthGrid(1, 1, 1, func(int, int) int { return 0 })},
		want: nil,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top := tt.m.build(t)
			d, err := Build(top)
			if err != nil {
				t.Fatal(err)
			}
			checkDomains(t, top, d)
			if got := levelsSummary(d); !slices.Equal(got, tt.want) {
				t.Errorf("levels:\n got %q\nwant %q", got, tt.want)
			}
			for _, n := range tt.notes {
				if !slices.ContainsFunc(d.Notes, func(s string) bool { return strings.Contains(s, n) }) {
					t.Errorf("no note containing %q in %q", n, d.Notes)
				}
			}
			if len(tt.notes) == 0 && len(d.Notes) > 0 {
				t.Errorf("unexpected notes %q", d.Notes)
			}
		})
	}
}

// TestBuildGroups checks the groups against the examples worked out in
// the comments of kernel/sched/topology.c.
func TestBuildGroups(t *testing.T) {
	tests := []struct {
		name   string
		matrix [][]int
		// want[cpu] lists the CPU's domains as "span:groups".
		want map[int][]string
	}{{
		name:   "ring",
		matrix: [][]int{{10, 20, 30, 20}, {20, 10, 20, 30}, {30, 20, 10, 20}, {20, 30, 20, 10}},
		want: map[int][]string{
			// "For instance Node-0 NUMA-2 would only get groups: 0-1,3
			// and 1-3."
			0: {"0-1,3:{0}{1}{3}", "0-3:{0-1,3}{1-3}"},
			1: {"0-2:{1}{2}{0}", "0-3:{0-2}{0,2-3}"},
		},
	}, {
		name:   "asymmetric (topology.c: nodes 1,2 fully connected, 0,3 not)",
		matrix: [][]int{{10, 20, 20, 30}, {20, 10, 20, 20}, {20, 20, 10, 20}, {30, 20, 20, 10}},
		want: map[int][]string{
			0: {"0-2:{0}{1}{2}", "0-3:{0-2}{1-3}"},
			1: {"0-3:{1}{2}{3}{0}"},
			2: {"0-3:{2}{3}{0}{1}"},
			3: {"1-3:{3}{1}{2}", "0-3:{1-3}{0-2}"},
		},
	}, {
		name:   "diameter 3 (find_descended_sibling)",
		matrix: [][]int{{10, 20, 30, 40}, {20, 10, 20, 30}, {30, 20, 10, 20}, {40, 30, 20, 10}},
		want: map[int][]string{
			0: {"0-1:{0}{1}", "0-2:{0-1}{2}", "0-3:{0-2}{1-3}"},
			1: {"0-2:{1}{2}{0}", "0-3:{0-2}{2-3}"},
			2: {"1-3:{2}{3}{1}", "0-3:{1-3}{0-1}"},
			3: {"2-3:{3}{2}", "1-3:{2-3}{1}", "0-3:{1-3}{0-2}"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top := synthMachine{
				cpus:  synthGrid(4, 1, 1, func(p, _ int) int { return p }),
				nodes: []int{0, 1, 2, 3}, matrix: tt.matrix,
			}.build(t)
			d, err := Build(top)
			if err != nil {
				t.Fatal(err)
			}
			checkDomains(t, top, d)
			for cpu, want := range tt.want {
				var got []string
				for _, dom := range d.Chain(cpu) {
					got = append(got, dom.Span.String()+":"+groupSummary(dom))
				}
				if !slices.Equal(got, want) {
					t.Errorf("CPU %d:\n got %q\nwant %q", cpu, got, want)
				}
			}
		})
	}
}

func TestBuildParams(t *testing.T) {
	// 2 packages (one node each) x 2 cores x 2 threads, L3 per package,
	// distance 40: SMT, LLC, NUMA/40.
	m := synthMachine{
		cpus:  synthGrid(2, 2, 2, func(p, _ int) int { return p }),
		llc:   []string{"0-3", "4-7"},
		nodes: []int{0, 1}, matrix: [][]int{{10, 40}, {40, 10}},
	}
	type want struct {
		name            LevelName
		imbalance, nice int
		flags           Flags
		imbNUMA         int
	}
	base := FlagBalanceNewIdle | FlagBalanceExec | FlagBalanceFork | FlagWakeAffine | FlagPreferSibling
	wants := []want{
		{SMT, 110, 0, base | FlagShareCPUCapacity | FlagShareLLC, 0},
		{LLC, 117, 1, base | FlagShareLLC, 0},
		// 40 > RECLAIM_DISTANCE: no exec/fork balancing, no wake-affine.
		// imb_numa_nr: the level above the LLC (the node, one LLC)
		// gets max(1, 4>>3) = 1, scaled by 8/8 at the first NUMA level.
		{NUMA, 125, 2, FlagBalanceNewIdle | FlagNUMA | FlagSerialize | FlagOverlap, 1},
	}
	d, err := Build(m.build(t))
	if err != nil {
		t.Fatal(err)
	}
	chain := d.Chain(0)
	if len(chain) != len(wants) {
		t.Fatalf("CPU 0 has %d domains, want %d: %q", len(chain), len(wants), levelsSummary(d))
	}
	for i, w := range wants {
		p := chain[i].Params
		if chain[i].Level.Name != w.name || p.ImbalancePct != w.imbalance || p.CacheNiceTries != w.nice || p.Flags != w.flags || p.ImbNUMANr != w.imbNUMA {
			t.Errorf("domain %d: %s pct %d nice %d flags %s imb %d; want %s pct %d nice %d flags %s imb %d",
				i, chain[i].Level.Name, p.ImbalancePct, p.CacheNiceTries, p.Flags, p.ImbNUMANr,
				w.name, w.imbalance, w.nice, w.flags, w.imbNUMA)
		}
		if d.Levels[i].Params != p {
			t.Errorf("level %s params %+v, domain's %+v", d.Levels[i].Name, d.Levels[i].Params, p)
		}
	}

	// Distance 20 is within RECLAIM_DISTANCE: fork/exec/wake-affine stay.
	m.matrix = [][]int{{10, 20}, {20, 10}}
	d, err = Build(m.build(t))
	if err != nil {
		t.Fatal(err)
	}
	if f := d.Chain(0)[2].Params.Flags; f != base&^FlagPreferSibling|FlagNUMA|FlagSerialize|FlagOverlap {
		t.Errorf("NUMA/20 flags %s", f)
	}

	// AMD Zen raises node_reclaim_distance to 32.
	m.matrix = [][]int{{10, 32}, {32, 10}}
	for _, zen := range []bool{false, true} {
		m.amdZen = zen
		d, err = Build(m.build(t))
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Chain(0)[2].Params.Flags&FlagWakeAffine != 0; got != zen {
			t.Errorf("distance 32, AMD Zen %v: wake-affine %v", zen, got)
		}
	}
}

func TestBuildAsymCapacity(t *testing.T) {
	// One package: cluster {0,1} of big cores, cluster {2,3} of little ones.
	cpus := synthGrid(1, 4, 1, func(int, int) int { return 0 })
	for i := range cpus {
		cpus[i].cluster = i / 2
		cpus[i].capacity = []int{1024, 1024, 512, 512}[i]
	}
	top := synthMachine{cpus: cpus, l2: []string{"0-1", "2-3"}, llc: []string{"0-3"}}.build(t)
	d, err := Build(top)
	if err != nil {
		t.Fatal(err)
	}
	checkDomains(t, top, d)
	if got, want := levelsSummary(d), []string{"CLUSTER {0-1}{2-3}", "LLC {0-3}"}; !slices.Equal(got, want) {
		t.Errorf("levels %q, want %q", got, want)
	}
	chain := d.Chain(0)
	outer := chain[len(chain)-1]
	if outer.Params.Flags&(FlagAsymCapacity|FlagAsymCapacityFull) != FlagAsymCapacity|FlagAsymCapacityFull {
		t.Errorf("outer domain %s flags %s, want ASYM_CPUCAPACITY_FULL", outer.Span, outer.Params.Flags)
	}
	inner := chain[0]
	if inner.Params.Flags&(FlagAsymCapacity|FlagPreferSibling) != 0 {
		t.Errorf("inner domain %s flags %s: want no asymmetry and no PREFER_SIBLING below an asymmetric parent", inner.Span, inner.Params.Flags)
	}
}

func TestBuildErrors(t *testing.T) {
	good := func() *topology.Topology {
		return synthMachine{
			cpus:  synthGrid(2, 1, 1, func(p, _ int) int { return p }),
			nodes: []int{0, 1}, matrix: [][]int{{10, 20}, {20, 10}},
		}.build(t)
	}
	tests := []struct {
		name   string
		break_ func(*topology.Topology) *topology.Topology
		want   string
	}{
		{"nil", func(*topology.Topology) *topology.Topology { return nil }, "nil Topology"},
		{"no usable CPU", func(t *topology.Topology) *topology.Topology { t.Usable = cpuset.Set{}; return t }, "no usable CPUs"},
		{"usable CPU unknown", func(t *topology.Topology) *topology.Topology { t.Usable.Add(9); return t }, "usable CPU 9 is not in Topology.CPUs"},
		{"core index", func(t *topology.Topology) *topology.Topology { t.CPUs[1].Core = 7; return t }, "CPU 1: Core index 7 out of range [0,2)"},
		{"short matrix", func(t *topology.Topology) *topology.Topology { t.Distances.Matrix = t.Distances.Matrix[:1]; return t }, "distance table has 1 rows for 2 nodes"},
		{"short row", func(t *topology.Topology) *topology.Topology { t.Distances.Matrix[1] = []int{20}; return t }, "distance row of node 1 has 1 entries for 2 nodes"},
		{"duplicate node", func(t *topology.Topology) *topology.Topology { t.Distances.Nodes = []int{0, 0}; return t }, "node 0 appears twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(tt.break_(good()))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestFlagsString(t *testing.T) {
	for _, tt := range []struct {
		f    Flags
		want string
	}{
		{0, "0"},
		{FlagBalanceNewIdle | FlagWakeAffine, "SD_BALANCE_NEWIDLE|SD_WAKE_AFFINE"},
		{FlagNUMA | FlagOverlap, "SD_NUMA|SD_OVERLAP"},
	} {
		if got := tt.f.String(); got != tt.want {
			t.Errorf("Flags(%#x).String() = %q, want %q", uint32(tt.f), got, tt.want)
		}
	}
}

func TestHighestLowest(t *testing.T) {
	top := synthMachine{
		cpus:  synthGrid(2, 2, 2, func(p, _ int) int { return p }),
		llc:   []string{"0-3", "4-7"},
		nodes: []int{0, 1}, matrix: [][]int{{10, 20}, {20, 10}},
	}.build(t)
	d, err := Build(top)
	if err != nil {
		t.Fatal(err)
	}
	if llc := d.Highest(5, FlagShareLLC); llc == nil || llc.Span.String() != "4-7" {
		t.Errorf("Highest(5, FlagShareLLC) = %v, want the 4-7 domain", llc)
	}
	if numa := d.Lowest(5, FlagNUMA); numa == nil || numa.Span.String() != "0-7" {
		t.Errorf("Lowest(5, FlagNUMA) = %v, want the 0-7 domain", numa)
	}
	if got := d.Lowest(5, FlagCluster); got != nil {
		t.Errorf("Lowest(5, FlagCluster) = %v, want nil", got)
	}
	if got := d.Chain(99); got != nil {
		t.Errorf("Chain(99) = %v, want nil", got)
	}
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

// corpusLevels are the levels expected on corpus machines, innermost first,
// each with what Linux itself builds there (default_topology[] or x86's
// x86_topology[] plus sched_init_numa) for comparison. Linux's PKG level is
// cpu_cpu_mask, the node, so it never shows sockets that share a node;
// numasteal keeps PACKAGE for them.
var corpusLevels = map[string][]string{
	// Linux: PKG 0-1 (the node; MC is one core), NUMA 0-15.
	"16amd64-8n2c": {"PACKAGE 8×2", "NUMA/20 1×16"},
	// Linux: SMT, MC (L3 = socket), PKG 0-15 (the only node).
	"16em64t-4s2c2t": {"SMT 8×2", "LLC 4×4", "NODE 1×16"},
	// Linux: MC (the L2 pairs), PKG 0-7; numasteal adds the two sockets.
	"8em64t-2s2ca2c": {"LLC 4×2", "PACKAGE 2×4", "NODE 1×8"},
	// Discovery keeps node 0 of the bugged table: the same as above.
	"8em64t-2s2ca2c-buggynuma": {"LLC 4×2", "PACKAGE 2×4", "NODE 1×8"},
	// Linux (NUMA in package): MC = node = L3, NUMA 16 (the package and
	// its neighbours), NUMA 22.
	"48amd64-4pa2n6c-sparse": {"LLC 8×6", "NUMA/16 8×30,42", "NUMA/22 1×48"},
	"64amd64-4s2n4ca2co":     {"LLC 8×8", "NUMA/16 8×40,56", "NUMA/22 1×64"},
	// Linux: PKG (node 8 CPUs, MC 2-CPU packages below it), NUMA 17, NUMA
	// 20; distance 14 only reaches the CPU-less node 16 and is no level.
	"128ia64-17n4s2c": {"PACKAGE 64×2", "NODE 16×8", "NUMA/17 4×32", "NUMA/20 1×128"},
	// Linux: four NUMA levels above the node; 34 > RECLAIM_DISTANCE.
	"256ia64-64n2s2c": {"PACKAGE 128×2", "NODE 64×4", "NUMA/22 16×16", "NUMA/26 16×48", "NUMA/30 8×160", "NUMA/34 1×256"},
	// Linux with Sub-NUMA Clustering: SMT, MC clipped to the node, NUMA 11
	// (the package), NUMA 21.
	"memorysidecaches": {"SMT 40×2", "LLC 4×20", "NUMA/11 2×40", "NUMA/21 1×80"},
	// Two L3s of a hybrid aarch64: asymmetric capacities.
	"nvidia-dgx-gb10": {"LLC 2×10", "PACKAGE 1×20"},
}

// TestBuildCorpus builds the domains of every corpus machine and
// checks their properties, the NUMA distances against the kernel's table (as
// sched_init_numa would collect them) and the levels of the machines above.
func TestBuildCorpus(t *testing.T) {
	corpus.Dir(t) // skips with a message when ../shared is absent
	names := corpus.Names()
	if len(names) == 0 {
		t.Fatal("corpus has no machines")
	}
	for name := range corpusLevels {
		if !slices.Contains(names, name) {
			t.Errorf("corpus lacks %s", name)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			root := corpus.Extract(t, name)
			top, err := topology.Discover(topology.WithRoot(root))
			if err != nil {
				t.Fatal(err)
			}
			d, err := Build(top)
			if err != nil {
				t.Fatal(err)
			}
			checkDomains(t, top, d)
			var got []string
			for _, l := range d.Levels {
				got = append(got, shape(l))
			}
			if want, ok := corpusLevels[name]; ok && !slices.Equal(got, want) {
				t.Errorf("levels\n got %q\nwant %q", got, want)
			}
			if want := kernelNUMADistances(t, corpus.Load(t, name), top); !slices.Equal(d.NUMADistances, want) {
				t.Errorf("NUMA distances %v, want %v from the kernel's table", d.NUMADistances, want)
			}
			t.Logf("levels %q, notes %q", got, d.Notes)
		})
	}
}

// kernelNUMADistances computes sched_domains_numa_distance[] from the raw
// node*/distance rows of expected.json: the distinct distances between
// nodes that hold usable CPUs.
func kernelNUMADistances(t *testing.T, e *corpus.Expected, top *topology.Topology) []int {
	t.Helper()
	kd := e.KernelDistances
	if kd == nil || top.Distances == nil {
		return nil
	}
	row := map[int]int{}
	for i, n := range kd.Nodes {
		row[n] = i
	}
	var nodes []int
	for _, n := range e.NUMANodes {
		_, inTable := row[n.ID]
		if inTable && cpuset.Of(n.KernelCPUs...).Intersects(top.Usable) {
			nodes = append(nodes, n.ID)
		}
	}
	var out []int
	for _, a := range nodes {
		for _, b := range nodes {
			// The kernel's rows list every online node in order; the
			// column of node b is its position in kd.Nodes.
			if d := kd.Matrix[row[a]][row[b]]; !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
	}
	slices.Sort(out)
	return out
}

func BenchmarkBuild(b *testing.B) {
	// 256 CPUs in 64 nodes of 2 packages, 4 distance levels.
	cpus := synthGrid(128, 2, 1, func(p, _ int) int { return p / 2 })
	nodes := make([]int, 64)
	matrix := make([][]int, 64)
	for i := range nodes {
		nodes[i] = i
		matrix[i] = make([]int, 64)
		for j := range matrix[i] {
			switch {
			case i == j:
				matrix[i][j] = 10
			case i/4 == j/4:
				matrix[i][j] = 22
			case i/16 == j/16:
				matrix[i][j] = 26
			default:
				matrix[i][j] = 34
			}
		}
	}
	top := synthMachine{cpus: cpus, nodes: nodes, matrix: matrix}.build(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(top); err != nil {
			b.Fatal(err)
		}
	}
}
