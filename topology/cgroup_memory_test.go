package topology_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/topology"
)

// memoryFixtures are the trees under testdata/memory, one per cgroup
// layout, with the memory cgroups MemoryCgroups finds in each. The memory
// package's tests read the same trees for their limits, usage and
// pressure.
var memoryFixtures = []struct {
	name string
	want []topology.MemoryCgroup
}{
	// v1: the memory hierarchy with the process in /build/job.
	{"v1", []topology.MemoryCgroup{
		{Dir: "/sys/fs/cgroup/memory/build/job", Depth: 0},
		{Dir: "/sys/fs/cgroup/memory/build", Depth: 1},
		{Dir: "/sys/fs/cgroup/memory", Depth: 2},
	}},
	// v2: pure unified hierarchy whose root lists the memory controller.
	{"v2", []topology.MemoryCgroup{
		{Dir: "/sys/fs/cgroup/user.slice/build.scope", V2: true, Depth: 0},
		{Dir: "/sys/fs/cgroup/user.slice", V2: true, Depth: 1},
		{Dir: "/sys/fs/cgroup", V2: true, Depth: 2},
	}},
	// hybrid: v1 controllers and a cgroup2 mount at unified with no
	// controller (this project's test machine); memory is v1's.
	{"hybrid", []topology.MemoryCgroup{
		{Dir: "/sys/fs/cgroup/memory/process_api/0c920a9b11a43f2e98a00774d31a1c62", Depth: 0},
		{Dir: "/sys/fs/cgroup/memory/process_api", Depth: 1},
		{Dir: "/sys/fs/cgroup/memory", Depth: 2},
	}},
	// namespace: the cgroup2 mount shows the subtree /kubepods/pod1 at
	// /sys/fs/cgroup; the walk stops at the mount's root.
	{"namespace", []topology.MemoryCgroup{
		{Dir: "/sys/fs/cgroup/ctr", V2: true, Depth: 0},
		{Dir: "/sys/fs/cgroup", V2: true, Depth: 1},
	}},
	// namespace-v1: docker on v1, the process's group is the mount's root.
	{"namespace-v1", []topology.MemoryCgroup{
		{Dir: "/sys/fs/cgroup/memory", Depth: 0},
	}},
	// nomemctl: no hierarchy has the memory controller.
	{"nomemctl", nil},
	// nopsi: Linux 3.10, v1.
	{"nopsi", []topology.MemoryCgroup{
		{Dir: "/sys/fs/cgroup/memory/build", Depth: 0},
		{Dir: "/sys/fs/cgroup/memory", Depth: 1},
	}},
}

func TestMemoryCgroupsFixtures(t *testing.T) {
	for _, tt := range memoryFixtures {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join("testdata", "memory", tt.name)
			got, err := topology.MemoryCgroups(root, 0)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("MemoryCgroups(%s) = %v, %v; want %v", root, got, err, tt.want)
			}
			// Every group is a directory of the tree.
			for _, g := range got {
				if fi, err := os.Stat(filepath.Join(root, g.Dir)); err != nil || !fi.IsDir() {
					t.Errorf("%v is not a directory of %s: %v", g, root, err)
				}
			}
		})
	}
}

// TestMemoryCgroupsEdits changes one fixture at a time: a process given
// by pid, a cgroup hidden by a namespace, no mount table, malformed files.
func TestMemoryCgroupsEdits(t *testing.T) {
	v1 := memoryFixtures[0].want
	tests := []struct {
		name    string
		fixture string
		pid     int
		edits   treeEdits
		want    []topology.MemoryCgroup
		err     string
	}{
		{name: "pid", fixture: "v1", pid: 42, edits: treeEdits{
			"proc/self":         rm,
			"proc/42/cgroup":    "4:memory:/build\n",
			"proc/42/mountinfo": "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
		}, want: []topology.MemoryCgroup{{Dir: "/sys/fs/cgroup/memory/build"}, {Dir: "/sys/fs/cgroup/memory", Depth: 1}}},
		{name: "no proc cgroup", fixture: "v1", edits: treeEdits{"proc/self/cgroup": rm}},
		{name: "no mountinfo: the standard places", fixture: "v1", edits: treeEdits{"proc/self/mountinfo": rm}, want: v1},
		{name: "no mountinfo, v2", fixture: "v2", edits: treeEdits{"proc/self/mountinfo": rm}, want: memoryFixtures[1].want},
		// A cgroup outside the mounted subtree cannot be read.
		{name: "hidden by a namespace", fixture: "namespace", edits: treeEdits{"proc/self/cgroup": "0::/kubepods/pod2/ctr\n"}},
		{name: "at the mount's root", fixture: "namespace", edits: treeEdits{"proc/self/cgroup": "0::/kubepods/pod1\n"},
			want: []topology.MemoryCgroup{{Dir: "/sys/fs/cgroup", V2: true}}},
		// v2 without the memory controller at the mount's root: none.
		{name: "v2 without memory", fixture: "v2", edits: treeEdits{"sys/fs/cgroup/cgroup.controllers": "cpu io pids\n"}},
		{name: "v2 without cgroup.controllers", fixture: "v2", edits: treeEdits{"sys/fs/cgroup/cgroup.controllers": rm}},
		// The process at the root of the hierarchy: the root alone.
		{name: "root cgroup", fixture: "v2", edits: treeEdits{"proc/self/cgroup": "0::/\n"},
			want: []topology.MemoryCgroup{{Dir: "/sys/fs/cgroup", V2: true}}},
		{name: "escaped mount point", fixture: "v1", edits: treeEdits{
			"proc/self/mountinfo": `35 31 0:32 / /sys/fs/cgroup/mem\040ory rw - cgroup cgroup rw,memory` + "\n",
			"proc/self/cgroup":    "4:memory:/build\n",
		}, want: []topology.MemoryCgroup{{Dir: "/sys/fs/cgroup/mem ory/build"}, {Dir: "/sys/fs/cgroup/mem ory", Depth: 1}}},
		// v1 with memory co-mounted beside other controllers.
		{name: "co-mounted", fixture: "v1", edits: treeEdits{
			"proc/self/mountinfo": "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct,memory rw - cgroup cgroup rw,cpu,cpuacct,memory\n",
			"proc/self/cgroup":    "3:cpu,cpuacct,memory:/build\n",
		}, want: []topology.MemoryCgroup{{Dir: "/sys/fs/cgroup/cpu,cpuacct,memory/build"}, {Dir: "/sys/fs/cgroup/cpu,cpuacct,memory", Depth: 1}}},
		// v1 memory where the v2 hierarchy has the controller too (a v1
		// memory mount takes it from v2, but a dump may show both): v1.
		{name: "v1 before v2", fixture: "v1", edits: treeEdits{
			"proc/self/mountinfo":                      "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
			"proc/self/cgroup":                         "4:memory:/build\n0::/other\n",
			"sys/fs/cgroup/unified/cgroup.controllers": "memory\n",
		}, want: []topology.MemoryCgroup{{Dir: "/sys/fs/cgroup/memory/build"}, {Dir: "/sys/fs/cgroup/memory", Depth: 1}}},
		{name: "bad cgroup", fixture: "v1", edits: treeEdits{"proc/self/cgroup": "4:memory\n"},
			err: `topology: proc/self/cgroup "4:memory": cgroup line is not id:controllers:/path: invalid syntax`},
		{name: "bad mountinfo", fixture: "v1", edits: treeEdits{"proc/self/mountinfo": "35 31 0:32 / /sys/fs/cgroup/memory rw\n"},
			err: `topology: proc/self/mountinfo "35 31 0:32 / /sys/fs/cgroup/memory rw": mountinfo line lacks "- type source options": invalid syntax`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := fixtureTree(t, filepath.Join("testdata", "memory", tt.fixture), tt.edits)
			got, err := topology.MemoryCgroups(root, tt.pid)
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if msg != tt.err || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("MemoryCgroups = %v, %v; want %v, %q", got, err, tt.want, tt.err)
			}
			var fe *topology.FileError
			if err != nil && !errors.As(err, &fe) {
				t.Errorf("error %v is not a *FileError", err)
			}
		})
	}
}

// TestMemoryCgroupsLive asserts only what this machine shows: each group
// found is a directory, own group first, depths counting up.
func TestMemoryCgroupsLive(t *testing.T) {
	got, err := topology.MemoryCgroups("/", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("memory cgroups: %v", got)
	for i, g := range got {
		if g.Depth != i || !strings.HasPrefix(g.Dir, "/sys/fs/cgroup") {
			t.Errorf("group %d is %v", i, g)
		}
		if fi, err := os.Stat(g.Dir); err != nil || !fi.IsDir() {
			t.Errorf("%v: %v", g, err)
		}
	}
}

// FuzzMemoryCgroups writes arbitrary bytes into proc/self/cgroup or
// mountinfo of a fixture and checks that MemoryCgroups neither panics nor
// returns an error other than a *FileError, and that what it finds is a
// chain of directories below the root: depths 0, 1, ... in one hierarchy.
func FuzzMemoryCgroups(f *testing.F) {
	files := []string{"proc/self/cgroup", "proc/self/mountinfo"}
	fixtures := make([]string, len(memoryFixtures))
	for i, fx := range memoryFixtures {
		fixtures[i] = fixtureTree(f, filepath.Join("testdata", "memory", fx.name), nil)
		for j, p := range files {
			b, err := os.ReadFile(filepath.Join(fixtures[i], p))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(i), uint8(j), b)
		}
	}
	f.Add(uint8(3), uint8(0), []byte("0::/kubepods/pod1/../../etc\n"))
	f.Add(uint8(0), uint8(0), []byte("4:memory:/build/../../..\n"))
	f.Add(uint8(0), uint8(1), []byte("35 31 0:32 /.. /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"))
	f.Fuzz(func(t *testing.T, which, file uint8, content []byte) {
		root := fixtures[int(which)%len(fixtures)]
		p := filepath.Join(root, files[int(file)%len(files)])
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(p, orig, 0o644)
		got, err := topology.MemoryCgroups(root, 0)
		if err != nil {
			var fe *topology.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("%q: error %v is not a *FileError", content, err)
			}
			return
		}
		for i, g := range got {
			if g.Depth != i || g.V2 != got[0].V2 || !strings.HasPrefix(g.Dir, "/") || filepath.Clean(g.Dir) != g.Dir ||
				(i > 0 && filepath.Dir(got[i-1].Dir) != g.Dir) {
				t.Fatalf("%q: group %d is %v in %v", content, i, g, got)
			}
		}
	})
}
