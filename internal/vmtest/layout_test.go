package vmtest

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/topology/cpuset"
)

func TestLayoutArgs(t *testing.T) {
	// The 4-node layout with unequal distances, spelled out with explicit
	// node lists.
	l := Layouts()[1]
	want := []string{"--sockets", "2", "--dies", "1", "--cores", "4", "--threads", "1",
		"--node-cpus", "0-1;2-3;4-5;6-7", "--node-mem", "128;128;128;128",
		"--distances", "10,16,22,22;16,10,22,22;22,22,10,16;22,22,16,10"}
	if got := l.Args(); !slices.Equal(got, want) {
		t.Errorf("Args() =\n%q\nwant\n%q", got, want)
	}
	cpuless := Layouts()[2].Args()
	if i := slices.Index(cpuless, "--node-cpus"); cpuless[i+1] != "0-1;2-3;" {
		t.Errorf("CPU-less layout: --node-cpus %q, want a trailing empty entry", cpuless[i+1])
	}
}

func TestLayoutsAreValid(t *testing.T) {
	for _, l := range Layouts() {
		back, err := Decode(l.Encode())
		if err != nil {
			t.Fatalf("%s: %v", l.Name, err)
		}
		if !reflect.DeepEqual(back, l) {
			t.Errorf("%s: Decode(Encode()) = %+v", l.Name, back)
		}
		if _, err := l.CPUs(); err != nil {
			t.Errorf("%s: %v", l.Name, err)
		}
	}
}

func TestNodesNumbering(t *testing.T) {
	tests := []struct {
		name     string
		nodeCPUs []string
		wantQEMU []int // QEMU index of Linux node 0, 1, ...
	}{
		{"in order", []string{"0-1", "2-3"}, []int{0, 1}},
		{"CPU-less last", []string{"0-1", "2-3", ""}, []int{0, 1, 2}},
		// numa-vm README: a CPU-less node placed first is renumbered.
		{"CPU-less first", []string{"", "0-3"}, []int{1, 0}},
		{"by lowest CPU", []string{"2-3", "0-1"}, []int{1, 0}},
		{"interleaved CPUs", []string{"1,3", "0,2"}, []int{1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Layout{Name: tt.name, Sockets: 1, Dies: 1, Cores: 4, Threads: 1,
				NodeCPUs: tt.nodeCPUs, NodeMemMB: make([]int, len(tt.nodeCPUs))}
			nodes, err := l.Nodes()
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for i, n := range nodes {
				if n.ID != i {
					t.Errorf("node %d has ID %d", i, n.ID)
				}
				got = append(got, n.QEMU)
			}
			if !slices.Equal(got, tt.wantQEMU) {
				t.Errorf("QEMU order %v, want %v", got, tt.wantQEMU)
			}
		})
	}
}

func TestCPUs(t *testing.T) {
	// 2 sockets x 2 dies x 2 cores x 2 threads, one node per die.
	l := Layout{Name: "dies", Sockets: 2, Dies: 2, Cores: 2, Threads: 2,
		NodeCPUs: []string{"0-3", "4-7", "8-11", "12-15"}, NodeMemMB: []int{64, 64, 64, 64}}
	cpus, err := l.CPUs()
	if err != nil {
		t.Fatal(err)
	}
	tests := []CPU{
		{ID: 0, PackageID: 0, DieID: 0, CoreID: 0, Siblings: cpuset.Range(0, 1), Node: 0},
		{ID: 5, PackageID: 0, DieID: 1, CoreID: 2, Siblings: cpuset.Range(4, 5), Node: 1},
		{ID: 10, PackageID: 1, DieID: 0, CoreID: 1, Siblings: cpuset.Range(10, 11), Node: 2},
		{ID: 15, PackageID: 1, DieID: 1, CoreID: 3, Siblings: cpuset.Range(14, 15), Node: 3},
	}
	for _, want := range tests {
		got := cpus[want.ID]
		if got.PackageID != want.PackageID || got.DieID != want.DieID || got.CoreID != want.CoreID ||
			!got.Siblings.Equal(want.Siblings) || got.Node != want.Node {
			t.Errorf("CPU %d = %+v, want %+v", want.ID, got, want)
		}
	}
	// Siblings split across nodes are no siblings for Linux.
	split := Layout{Name: "split", Sockets: 1, Dies: 1, Cores: 2, Threads: 2,
		NodeCPUs: []string{"0,2", "1,3"}, NodeMemMB: []int{64, 64}}
	cpus, err = split.CPUs()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cpus {
		if !c.Siblings.Equal(cpuset.Of(c.ID)) {
			t.Errorf("split layout: CPU %d siblings %s, want only itself", c.ID, c.Siblings)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	tests := []struct {
		text, want string
	}{
		{`{"name":`, "decode layout"},
		{`{"name":"x","sockets":1,"dies":1,"cores":2,"threads":1,"node_cpus":["0-1"],"node_mem_mb":[1,2]}`, "1 CPU lists but 2 memory sizes"},
		{`{"name":"x","sockets":1,"dies":1,"cores":2,"threads":1,"node_cpus":["0-1","1"],"node_mem_mb":[1,2]}`, "overlap or exceed"},
		{`{"name":"x","sockets":1,"dies":1,"cores":2,"threads":1,"node_cpus":["0"],"node_mem_mb":[1]}`, "nodes hold CPUs 0 of 2"},
		{`{"name":"x","sockets":1,"dies":1,"cores":2,"threads":1,"node_cpus":["0-x"],"node_mem_mb":[1]}`, "invalid syntax"},
		{`{"name":"x","sockets":1,"dies":1,"cores":2,"threads":1,"node_cpus":["0-1"],"node_mem_mb":[1],"distances":[[10],[10]]}`, "2 distance rows for 1 nodes"},
	}
	for _, tt := range tests {
		if _, err := Decode(tt.text); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Decode(%s) = %v, want an error containing %q", tt.text, err, tt.want)
		}
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv(EnvInVM, "")
	if _, inVM, err := FromEnv(); inVM || err != nil {
		t.Errorf("outside a VM: FromEnv() = %v, %v", inVM, err)
	}
	t.Setenv(EnvInVM, "1")
	t.Setenv(EnvLayout, Layouts()[3].Encode())
	l, inVM, err := FromEnv()
	if !inVM || err != nil || l.Name != "memoryless-node" {
		t.Errorf("in a VM: FromEnv() = %s, %v, %v", l.Name, inVM, err)
	}
}
