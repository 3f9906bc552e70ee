package vmtest

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// Environment variables that numa-vm passes to the guest.
const (
	// EnvInVM is "1" inside a VM started by this package's tests; the
	// guest checks skip without it.
	EnvInVM = "NUMASTEAL_IN_VM"
	// EnvLayout holds the Layout, as JSON.
	EnvLayout = "NUMASTEAL_VM_LAYOUT"
)

// Layout is a machine for numa-vm: the -smp topology and, per NUMA node in
// QEMU's order, its CPUs, memory and distances.
type Layout struct {
	// Name names the layout in test output.
	Name string `json:"name"`
	// Sockets, Dies, Cores (per die) and Threads (per core) give the vCPU
	// count and numbering: CPU = ((socket*Dies+die)*Cores+core)*Threads+thread.
	Sockets int `json:"sockets"`
	Dies    int `json:"dies"`
	Cores   int `json:"cores"`
	Threads int `json:"threads"`
	// NodeCPUs are the CPUs of each QEMU node as cpulists; "" is a CPU-less
	// node.
	NodeCPUs []string `json:"node_cpus"`
	// NodeMemMB is each node's memory in MiB; 0 is a memory-less node.
	NodeMemMB []int `json:"node_mem_mb"`
	// Distances is the SLIT matrix in QEMU node order; nil means QEMU's
	// default (10 local, 20 remote).
	Distances [][]int `json:"distances,omitempty"`
	// MemLimitMiB, when not 0, is the memory.max of the cgroup v2 group
	// in which the guest's memory-limit check builds; the check runs only
	// on layouts that set it.
	MemLimitMiB int `json:"mem_limit_mib,omitempty"`
}

// Layouts returns the layouts the VM tests boot: two sockets of SMT cores
// on two nodes, four nodes with unequal distances, a CPU-less node, a
// memory-less node, two nodes of unequal memory, and two nodes whose
// builds run in a memory-limited cgroup v2 group.
func Layouts() []Layout {
	return []Layout{
		{Name: "2sockets-4cores-2threads-2nodes", Sockets: 2, Dies: 1, Cores: 4, Threads: 2,
			NodeCPUs: []string{"0-7", "8-15"}, NodeMemMB: []int{256, 256}},
		{Name: "4nodes-distances-10-16-22", Sockets: 2, Dies: 1, Cores: 4, Threads: 1,
			NodeCPUs: []string{"0-1", "2-3", "4-5", "6-7"}, NodeMemMB: []int{128, 128, 128, 128},
			Distances: [][]int{{10, 16, 22, 22}, {16, 10, 22, 22}, {22, 22, 10, 16}, {22, 22, 16, 10}}},
		{Name: "cpuless-node", Sockets: 1, Dies: 1, Cores: 4, Threads: 1,
			NodeCPUs: []string{"0-1", "2-3", ""}, NodeMemMB: []int{256, 256, 128}},
		{Name: "memoryless-node", Sockets: 1, Dies: 1, Cores: 4, Threads: 1,
			NodeCPUs: []string{"0-1", "2-3"}, NodeMemMB: []int{512, 0}},
		{Name: "unequal-memory-nodes", Sockets: 1, Dies: 1, Cores: 4, Threads: 1,
			NodeCPUs: []string{"0-1", "2-3"}, NodeMemMB: []int{192, 512}},
		{Name: "cgroup2-memory-limit", Sockets: 1, Dies: 1, Cores: 4, Threads: 1,
			NodeCPUs: []string{"0-1", "2-3"}, NodeMemMB: []int{512, 512}, MemLimitMiB: 256},
	}
}

// NumCPU is the number of vCPUs.
func (l Layout) NumCPU() int { return l.Sockets * l.Dies * l.Cores * l.Threads }

// Args returns the numa-vm options that boot l (without the program and
// without --env).
func (l Layout) Args() []string {
	args := []string{
		"--sockets", strconv.Itoa(l.Sockets), "--dies", strconv.Itoa(l.Dies),
		"--cores", strconv.Itoa(l.Cores), "--threads", strconv.Itoa(l.Threads),
		"--node-cpus", strings.Join(l.NodeCPUs, ";"),
	}
	mem := make([]string, len(l.NodeMemMB))
	for i, m := range l.NodeMemMB {
		mem[i] = strconv.Itoa(m)
	}
	args = append(args, "--node-mem", strings.Join(mem, ";"))
	if l.Distances != nil {
		rows := make([]string, len(l.Distances))
		for i, row := range l.Distances {
			cols := make([]string, len(row))
			for j, d := range row {
				cols[j] = strconv.Itoa(d)
			}
			rows[i] = strings.Join(cols, ",")
		}
		args = append(args, "--distances", strings.Join(rows, ";"))
	}
	return args
}

// Encode returns l as the JSON that EnvLayout carries.
func (l Layout) Encode() string {
	b, err := json.Marshal(l)
	if err != nil {
		// A Layout holds only strings and ints.
		panic("vmtest: Encode: " + err.Error())
	}
	return string(b)
}

// Decode parses what Encode wrote and checks that the layout is consistent.
func Decode(text string) (Layout, error) {
	var l Layout
	if err := json.Unmarshal([]byte(text), &l); err != nil {
		return Layout{}, fmt.Errorf("vmtest: decode layout %q: %w", text, err)
	}
	if _, err := l.Nodes(); err != nil {
		return Layout{}, err
	}
	return l, nil
}

// FromEnv returns the layout in $NUMASTEAL_VM_LAYOUT and whether the process
// runs inside a test VM at all ($NUMASTEAL_IN_VM=1).
func FromEnv() (l Layout, inVM bool, err error) {
	if os.Getenv(EnvInVM) != "1" {
		return Layout{}, false, nil
	}
	text, ok := os.LookupEnv(EnvLayout)
	if !ok {
		return Layout{}, true, fmt.Errorf("vmtest: %s is set but %s is not", EnvInVM, EnvLayout)
	}
	l, err = Decode(text)
	return l, true, err
}

// Node is a NUMA node as Linux numbers and reports it.
type Node struct {
	ID    int        // Linux's node id
	QEMU  int        // the node's index in the Layout
	CPUs  cpuset.Set // empty for a CPU-less node
	MemMB int        // requested memory; 0 for a memory-less node
}

// Nodes returns the nodes in Linux's numbering. Linux numbers nodes in the
// order its SRAT parser meets them, and QEMU's SRAT lists the CPU entries
// (in CPU order) before the memory entries, so nodes with CPUs come first,
// by lowest CPU, then CPU-less nodes in QEMU's order.
func (l Layout) Nodes() ([]Node, error) {
	if len(l.NodeCPUs) != len(l.NodeMemMB) {
		return nil, fmt.Errorf("vmtest: layout %s: %d CPU lists but %d memory sizes", l.Name, len(l.NodeCPUs), len(l.NodeMemMB))
	}
	nodes := make([]Node, len(l.NodeCPUs))
	var seen cpuset.Set
	for i, list := range l.NodeCPUs {
		cpus, err := cpuset.Parse(list)
		if err != nil {
			return nil, fmt.Errorf("vmtest: layout %s node %d: %w", l.Name, i, err)
		}
		if cpus.Intersects(seen) || (!cpus.IsEmpty() && cpus.Last() >= l.NumCPU()) {
			return nil, fmt.Errorf("vmtest: layout %s node %d: CPUs %q overlap or exceed %d vCPUs", l.Name, i, list, l.NumCPU())
		}
		seen = seen.Union(cpus)
		nodes[i] = Node{QEMU: i, CPUs: cpus, MemMB: l.NodeMemMB[i]}
	}
	if seen.Len() != l.NumCPU() {
		return nil, fmt.Errorf("vmtest: layout %s: nodes hold CPUs %s of %d", l.Name, seen, l.NumCPU())
	}
	if l.Distances != nil && len(l.Distances) != len(nodes) {
		return nil, fmt.Errorf("vmtest: layout %s: %d distance rows for %d nodes", l.Name, len(l.Distances), len(nodes))
	}
	slices.SortStableFunc(nodes, func(a, b Node) int {
		switch {
		case a.CPUs.IsEmpty() && b.CPUs.IsEmpty():
			return 0
		case a.CPUs.IsEmpty():
			return 1
		case b.CPUs.IsEmpty():
			return -1
		}
		return a.CPUs.First() - b.CPUs.First()
	})
	for i := range nodes {
		nodes[i].ID = i
	}
	return nodes, nil
}

// Distance returns the distance from QEMU node a to QEMU node b.
func (l Layout) Distance(a, b int) int {
	if l.Distances != nil {
		return l.Distances[a][b]
	}
	if a == b {
		return 10
	}
	return 20
}

// CPU is what Linux should report for one CPU under topology/.
type CPU struct {
	ID        int
	PackageID int        // physical_package_id: the socket
	DieID     int        // die_id: 0 unless Dies > 1
	CoreID    int        // core_id: counts within the package
	Siblings  cpuset.Set // thread_siblings_list
	Node      int        // Linux node id
}

// CPUs returns the expected view of every CPU. SMT siblings that QEMU put
// on different nodes are not siblings for Linux, which then lists only the
// CPU itself.
func (l Layout) CPUs() ([]CPU, error) {
	nodes, err := l.Nodes()
	if err != nil {
		return nil, err
	}
	nodeOf := make([]int, l.NumCPU())
	for _, n := range nodes {
		for c := range n.CPUs.All() {
			nodeOf[c] = n.ID
		}
	}
	out := make([]CPU, l.NumCPU())
	for c := range out {
		first := c / l.Threads * l.Threads
		sib := cpuset.Range(first, first+l.Threads-1)
		for s := range sib.All() {
			if nodeOf[s] != nodeOf[c] {
				sib = cpuset.Of(c)
				break
			}
		}
		out[c] = CPU{
			ID:        c,
			PackageID: c / (l.Dies * l.Cores * l.Threads),
			DieID:     c / (l.Cores * l.Threads) % l.Dies,
			CoreID:    c / l.Threads % (l.Dies * l.Cores),
			Siblings:  sib,
			Node:      nodeOf[c],
		}
	}
	return out, nil
}
