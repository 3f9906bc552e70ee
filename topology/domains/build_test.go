package domains

import (
	"slices"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/internal/corpus"
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

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
