package daemon

import (
	"errors"
	"slices"
	"testing"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/farm"
	"github.com/numasteal/numasteal/internal/corpus"
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/domains"
)

const mib = 1 << 20

// fakePlacer is a placer over nodes 0-2 of two CPUs each (node = cpu/2)
// with the free memory given (a missing node fails to read) and the
// held memory of each pid.
func fakePlacer(t *testing.T, free map[int]int64, held map[int]int64) (*nodePlacer, *pool) {
	t.Helper()
	p := &pool{slots: 6, running: map[int64]*job{}, perCPU: make([]int, 6),
		nodeOf: func(cpu int) int { return cpu / 2 }}
	np := &nodePlacer{
		nodes: []placeNode{{0, []int{0, 1}}, {1, []int{2, 3}}, {2, []int{4, 5}}},
		free: func(node int) (int64, error) {
			f, ok := free[node]
			if !ok {
				return 0, errors.New("no meminfo")
			}
			return f, nil
		},
		held: func(pid int) int64 {
			h, ok := held[pid]
			if !ok {
				t.Errorf("held(%d) read, not expected", pid)
			}
			return h
		},
	}
	return np, p
}

// run makes a job of need running on cpu, with launcher pid.
func run(p *pool, cpu, pid int, need int64) *job {
	j := testJob("b", need)
	j.cpu, j.pid, j.running = cpu, pid, true
	p.running[j.id] = j
	p.perCPU[cpu]++
	return j
}

func TestPlaceByNodeMemory(t *testing.T) {
	tests := []struct {
		name    string
		free    map[int]int64
		held    map[int]int64
		running func(p *pool)
		chosen  int
		need    int64
		want    int
	}{
		{name: "fits the balancer's node", free: map[int]int64{0: 500 * mib, 1: 900 * mib, 2: 900 * mib},
			chosen: 1, need: 400 * mib, want: 1},
		{name: "fits counting running needs whole: no process read", free: map[int]int64{0: 500 * mib},
			running: func(p *pool) { run(p, 0, 77, 100*mib) }, chosen: 1, need: 400 * mib, want: 1},
		{name: "moves to the node that fits", free: map[int]int64{0: 300 * mib, 1: 900 * mib, 2: 200 * mib},
			chosen: 0, need: 400 * mib, want: 2},
		{name: "the idlest CPU of that node", free: map[int]int64{0: 300 * mib, 1: 900 * mib, 2: 200 * mib},
			running: func(p *pool) { run(p, 2, 0, mib) }, chosen: 0, need: 400 * mib, want: 3},
		{name: "of the nodes that fit, the least loaded", free: map[int]int64{0: 300 * mib, 1: 900 * mib, 2: 500 * mib},
			running: func(p *pool) { run(p, 2, 0, mib); run(p, 3, 0, mib) }, chosen: 0, need: 400 * mib, want: 4},
		{name: "of the nodes that fit equally loaded, the most room", free: map[int]int64{0: 300 * mib, 1: 500 * mib, 2: 900 * mib},
			chosen: 0, need: 400 * mib, want: 4},
		{name: "none fits: the most room", free: map[int]int64{0: 300 * mib, 1: 350 * mib, 2: 200 * mib},
			running: func(p *pool) { run(p, 2, 0, mib) }, chosen: 0, need: 400 * mib, want: 3},
		{name: "none fits, the balancer's has the most room: stays", free: map[int]int64{0: 300 * mib, 1: 250 * mib, 2: 200 * mib},
			chosen: 1, need: 400 * mib, want: 1},
		{name: "a fitting node beats a roomier loaded one only by fitting", free: map[int]int64{0: 100 * mib, 1: 900 * mib, 2: 450 * mib},
			running: func(p *pool) { run(p, 2, 0, mib); run(p, 3, 0, mib); run(p, 4, 0, mib) }, chosen: 0, need: 400 * mib, want: 5},
		{name: "a running job's growth still to come counts", free: map[int]int64{0: 300 * mib, 1: 900 * mib, 2: 600 * mib},
			held: map[int]int64{41: 100 * mib}, running: func(p *pool) { run(p, 2, 41, 700*mib) },
			chosen: 0, need: 400 * mib, want: 4},
		{name: "a job whose pid is unknown counts whole", free: map[int]int64{0: 300 * mib, 1: 900 * mib, 2: 450 * mib},
			running: func(p *pool) { run(p, 2, 0, 600*mib) }, chosen: 0, need: 400 * mib, want: 4},
		{name: "a job holding more than its need counts nothing", free: map[int]int64{0: 300 * mib, 1: 900 * mib, 2: 450 * mib},
			held: map[int]int64{41: 800 * mib}, running: func(p *pool) { run(p, 2, 41, 600*mib) },
			chosen: 0, need: 400 * mib, want: 3},
		{name: "a remote job takes no node memory", free: map[int]int64{0: 300 * mib, 1: 900 * mib, 2: 450 * mib},
			running: func(p *pool) { j := run(p, 2, 0, 600*mib); j.lease, j.cpu = &farm.Lease{}, -1; p.perCPU[2]-- }, chosen: 0, need: 400 * mib, want: 2},
		{name: "the balancer's node unreadable: stays", free: map[int]int64{1: 900 * mib}, chosen: 0, need: 400 * mib, want: 0},
		{name: "an unreadable node is no target", free: map[int]int64{0: 100 * mib, 2: 200 * mib}, chosen: 0, need: 400 * mib, want: 4},
		{name: "no memory need: stays", free: map[int]int64{0: 0, 1: 900 * mib}, chosen: 0, need: 0, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np, p := fakePlacer(t, tt.free, tt.held)
			if tt.running != nil {
				tt.running(p)
			}
			j := testJob("b", tt.need)
			j.cpu = tt.chosen
			if got := np.place(p, j); got != tt.want {
				t.Errorf("place = CPU %d, want %d", got, tt.want)
			}
		})
	}
}

func TestPlaceKeeps(t *testing.T) {
	np, p := fakePlacer(t, map[int]int64{0: 0, 1: 900 * mib, 3: 900 * mib}, nil)
	j := testJob("b", 400*mib)
	j.cpu = 6 // node 3: not a target (memory-less, or outside cpuset.mems)
	if got := np.place(p, j); got != 6 {
		t.Errorf("a CPU on a node of unknown memory moved to %d", got)
	}
	j.cpu = -1 // no balancer
	if got := np.place(p, j); got != -1 {
		t.Errorf("no CPU became %d", got)
	}
	var none *nodePlacer
	j.cpu = 0
	if got := none.place(p, j); got != 0 {
		t.Errorf("a nil placer moved the job to %d", got)
	}
}

// TestPoolPlacesByNodeMemory: on a real 8-node machine's dump (node 0
// with 6.6 GiB free, the others 7.9 GiB), the balancer puts each job on
// node 0 of an idle pool; a job of 7 GiB goes to the node with the most
// free memory instead, a second one to the next, while they run; a small
// job stays on node 0.
func TestPoolPlacesByNodeMemory(t *testing.T) {
	corpus.Dir(t)
	topo, err := topology.Discover(topology.WithRoot(corpus.Extract(t, "16amd64-8n2c")))
	if err != nil {
		t.Fatal(err)
	}
	doms, err := domains.Build(topo)
	if err != nil {
		t.Fatal(err)
	}
	bal, err := balance.Default().Bind(topo, doms, topo.Usable, 0)
	if err != nil {
		t.Fatal(err)
	}
	p := newTestPool(t, 16, 1<<40)
	p.perCPU, p.bal, p.nodeOf, p.nodes = make([]int, 16), bal, topo.NodeOf, newNodePlacer(topo)
	if p.nodes == nil || len(p.nodes.nodes) != 8 {
		t.Fatalf("placer of 16amd64-8n2c: %+v, want 8 nodes", p.nodes)
	}
	// Node 7 has the most free memory (8249784 kB), node 5 the next.
	for _, step := range []struct {
		need      int64
		cpu, node int
	}{{7 << 30, 14, 7}, {7 << 30, 10, 5}, {256 * mib, 0, 0}} {
		j := testJob("b", step.need)
		p.submit(j)
		if !admitted(j) || j.cpu != step.cpu || j.node != step.node {
			t.Fatalf("job of %d MiB: admitted %v on CPU %d node %d, want CPU %d node %d",
				step.need/mib, admitted(j), j.cpu, j.node, step.cpu, step.node)
		}
	}
}

func TestNewNodePlacer(t *testing.T) {
	corpus.Dir(t)
	for _, tt := range []struct {
		machine string
		nodes   []int
	}{
		{"2arm-2c", nil}, // one node: no placement by memory
		{"16em64t-4s2c2t", nil},
		// Nodes 2-5 are allowed but have no allowed CPU.
		{"32amd64-4s2n4c-cgroup2", []int{0, 1}},
		// Node 4 is allowed, its CPUs 8-9 are not.
		{"16amd64-8n2c-cpusets", []int{1, 2, 3}},
		// The CPU-less HBM and NVM nodes are no targets.
		{"fakeheteromemtiers", []int{0, 1, 2}},
	} {
		topo, err := topology.Discover(topology.WithRoot(corpus.Extract(t, tt.machine)))
		if err != nil {
			t.Fatal(err)
		}
		np := newNodePlacer(topo)
		var got []int
		if np != nil {
			for _, n := range np.nodes {
				got = append(got, n.id)
			}
		}
		if !slices.Equal(got, tt.nodes) {
			t.Errorf("%s: placer nodes %v, want %v", tt.machine, got, tt.nodes)
		}
	}
}
