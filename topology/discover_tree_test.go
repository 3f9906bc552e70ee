package topology_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// treeEdits are changes to the testdata/tiny fixture: path (relative to the
// root) → new content, or removal when the content is "<rm>". Removals are
// applied before writes.
type treeEdits map[string]string

const rm = "<rm>"

// tinyTree copies testdata/tiny into a temporary directory, applies edits
// and returns the new root.
func tinyTree(t testing.TB, edits treeEdits) string {
	t.Helper()
	return fixtureTree(t, filepath.Join("testdata", "tiny"), edits)
}

// fixtureTree copies the tree src into a temporary directory, applies
// edits and returns the new root.
func fixtureTree(t testing.TB, src string, edits treeEdits) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Removals first, so that an edit may rebuild inside a removed tree.
	for p, content := range edits {
		if content == rm {
			if err := os.RemoveAll(filepath.Join(dst, filepath.FromSlash(p))); err != nil {
				t.Fatal(err)
			}
		}
	}
	for p, content := range edits {
		if content == rm {
			continue
		}
		target := filepath.Join(dst, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestDiscoverMalformed breaks one file at a time and checks that Discover
// fails with a *FileError naming that file and the offending text.
func TestDiscoverMalformed(t *testing.T) {
	const (
		cpu  = "sys/devices/system/cpu/"
		node = "sys/devices/system/node/"
		cg   = "sys/fs/cgroup/app/"
	)
	tests := []struct {
		name  string
		edits treeEdits
		path  string
		text  string
		is    error
	}{
		{"garbage cpulist", treeEdits{cpu + "online": "0-x\n"}, cpu + "online", "0-x", cpuset.ErrSyntax},
		{"reversed range", treeEdits{cpu + "possible": "3-0"}, cpu + "possible", "3-0", cpuset.ErrRange},
		{"cpu online file", treeEdits{cpu + "online": rm, cpu + "cpu1/online": "yes"}, cpu + "cpu1/online", "yes", strconv.ErrSyntax},
		{"core mask", treeEdits{cpu + "cpu0/topology/core_cpus": "zz"}, cpu + "cpu0/topology/core_cpus", "zz", cpuset.ErrSyntax},
		{"package id", treeEdits{cpu + "cpu0/topology/physical_package_id": "abc"}, cpu + "cpu0/topology/physical_package_id", "abc", strconv.ErrSyntax},
		{"core id", treeEdits{cpu + "cpu2/topology/core_id": "1.5"}, cpu + "cpu2/topology/core_id", "1.5", strconv.ErrSyntax},
		{"cache size", treeEdits{cpu + "cpu0/cache/index1/size": "1024Q"}, cpu + "cpu0/cache/index1/size", "1024Q", topology.ErrSyntax},
		{"cache type", treeEdits{cpu + "cpu2/cache/index0/type": "Trace"}, cpu + "cpu2/cache/index0/type", "Trace", topology.ErrSyntax},
		{"cache level", treeEdits{cpu + "cpu0/cache/index2/level": "12"}, cpu + "cpu0/cache/index2/level", "12", topology.ErrRange},
		{"shared map", treeEdits{cpu + "cpu0/cache/index0/shared_cpu_list": "0-1-2"}, cpu + "cpu0/cache/index0/shared_cpu_list", "0-1-2", cpuset.ErrSyntax},
		{"capacity", treeEdits{cpu + "cpu0/cpu_capacity": "big"}, cpu + "cpu0/cpu_capacity", "big", strconv.ErrSyntax},
		{"node online", treeEdits{node + "online": "0,,1"}, node + "online", "0,,1", cpuset.ErrSyntax},
		{"node cpulist", treeEdits{node + "node1/cpulist": "2-3\x01"}, node + "node1/cpulist", "2-3\x01", cpuset.ErrSyntax},
		{"distance word", treeEdits{node + "node0/distance": "10 abc"}, node + "node0/distance", "10 abc", topology.ErrSyntax},
		{"distance count", treeEdits{node + "node1/distance": "20 10 30"}, node + "node1/distance", "20 10 30", topology.ErrRange},
		{"distance empty", treeEdits{node + "node1/distance": "\n"}, node + "node1/distance", "", topology.ErrMissing},
		{"meminfo number", treeEdits{node + "node1/meminfo": "Node 1 MemTotal: lots kB\n"}, node + "node1/meminfo", "Node 1 MemTotal: lots kB", topology.ErrSyntax},
		{"meminfo missing", treeEdits{node + "node0/meminfo": "Node 0 MemFree: 1 kB\n"}, node + "node0/meminfo", "", topology.ErrMissing},
		{"proc meminfo", treeEdits{node[:len(node)-1]: rm, "proc/meminfo": "MemTotal: 12 MB\n"}, "proc/meminfo", "MemTotal: 12 MB", topology.ErrSyntax},
		{"cgroup file", treeEdits{"proc/self/cgroup": "0:/app\n"}, "proc/self/cgroup", "0:/app", topology.ErrSyntax},
		{"mountinfo", treeEdits{"proc/self/mountinfo": "30 1 0:26 / /sys/fs/cgroup rw\n"}, "proc/self/mountinfo", "30 1 0:26 / /sys/fs/cgroup rw", topology.ErrSyntax},
		{"cpuset cpus", treeEdits{cg + "cpuset.cpus.effective": "0-2,"}, cg + "cpuset.cpus.effective", "0-2,", cpuset.ErrSyntax},
		{"cpuset mems", treeEdits{cg + "cpuset.mems.effective": "one"}, cg + "cpuset.mems.effective", "one", cpuset.ErrSyntax},
		{"cpu.max", treeEdits{cg + "cpu.max": "lots 100000\n"}, cg + "cpu.max", "lots 100000", topology.ErrSyntax},
		{"status", treeEdits{"proc/self/status": "Cpus_allowed_list:\t0-\n"}, "proc/self/status", "0-", cpuset.ErrSyntax},
		{"cpuinfo", treeEdits{"proc/cpuinfo": "cpu family : six\n"}, "proc/cpuinfo", "cpu family : six", topology.ErrSyntax},
		{"nvidia", treeEdits{"proc/driver/nvidia/gpus/0004:04:00.0/numa_status": "Node: ?\n"}, "proc/driver/nvidia/gpus/0004:04:00.0/numa_status", "Node: ?", topology.ErrSyntax},
		{"no cpu dir", treeEdits{"sys/devices/system/cpu": rm}, "sys/devices/system/cpu", "", topology.ErrMissing},
		{"no online cpu", treeEdits{cpu + "online": "\n"}, cpu + "online", "", topology.ErrMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := tinyTree(t, tt.edits)
			topo, err := topology.Discover(topology.WithRoot(root))
			var fe *topology.FileError
			if !errors.As(err, &fe) {
				t.Fatalf("Discover = %v, %v; want a *FileError", topo, err)
			}
			if fe.Path != tt.path || fe.Text != tt.text || !errors.Is(err, tt.is) {
				t.Errorf("error %q: Path %q Text %q; want Path %q Text %q wrapping %v", err, fe.Path, fe.Text, tt.path, tt.text, tt.is)
			}
			if !strings.Contains(err.Error(), tt.path) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestDiscoverNoUsableCPU(t *testing.T) {
	root := tinyTree(t, treeEdits{"sys/fs/cgroup/app/cpuset.cpus.effective": "7\n"})
	_, err := topology.Discover(topology.WithRoot(root))
	if !errors.Is(err, topology.ErrNoUsableCPU) {
		t.Fatalf("Discover = %v, want ErrNoUsableCPU", err)
	}
	if want := "topology: no usable CPU: online CPUs 0-3, allowed "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
}
