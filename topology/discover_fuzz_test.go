package topology_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/numasteal/numasteal/topology"
)

// fuzzFiles are the files of testdata/tiny that FuzzDiscover overwrites,
// one per input: at least one of every kind Discover parses.
var fuzzFiles = []string{
	"sys/devices/system/cpu/online",
	"sys/devices/system/cpu/possible",
	"sys/devices/system/cpu/cpu0/topology/core_cpus_list",
	"sys/devices/system/cpu/cpu1/topology/package_cpus_list",
	"sys/devices/system/cpu/cpu2/topology/core_id",
	"sys/devices/system/cpu/cpu0/topology/physical_package_id",
	"sys/devices/system/cpu/cpu0/cache/index0/shared_cpu_list",
	"sys/devices/system/cpu/cpu2/cache/index2/size",
	"sys/devices/system/cpu/cpu0/cache/index1/level",
	"sys/devices/system/cpu/cpu0/cache/index0/type",
	"sys/devices/system/node/online",
	"sys/devices/system/node/node0/cpulist",
	"sys/devices/system/node/node1/distance",
	"sys/devices/system/node/node0/meminfo",
	"proc/cpuinfo",
	"proc/self/cgroup",
	"proc/self/mountinfo",
	"sys/fs/cgroup/cgroup.controllers",
	"sys/fs/cgroup/app/cpuset.cpus.effective",
	"sys/fs/cgroup/app/cpu.max",
}

// FuzzDiscover writes arbitrary bytes into one file of a valid tree and
// checks that Discover neither panics nor returns an error other than a
// *FileError or ErrNoUsableCPU, and that a success is self-consistent.
func FuzzDiscover(f *testing.F) {
	root := tinyTree(f, nil)
	originals := make([][]byte, len(fuzzFiles))
	for i, p := range fuzzFiles {
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			f.Fatal(err)
		}
		originals[i] = data
		f.Add(uint8(i), data)
	}
	f.Add(uint8(0), []byte("0-3,5\n"))
	f.Add(uint8(11), []byte("0-7\n"))
	f.Add(uint8(12), []byte("20 10 10\n"))
	f.Add(uint8(15), []byte("0::/\n"))
	f.Fuzz(func(t *testing.T, which uint8, content []byte) {
		i := int(which) % len(fuzzFiles)
		p := filepath.Join(root, fuzzFiles[i])
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(p, originals[i], 0o644)
		topo, err := topology.Discover(topology.WithRoot(root))
		if err != nil {
			var fe *topology.FileError
			if !errors.As(err, &fe) && !errors.Is(err, topology.ErrNoUsableCPU) {
				t.Fatalf("%s = %q: error %v is neither a *FileError nor ErrNoUsableCPU", fuzzFiles[i], content, err)
			}
			return
		}
		if topo.Usable.IsEmpty() || !topo.Usable.IsSubsetOf(topo.Online) || len(topo.CPUs) != topo.Online.Len() {
			t.Fatalf("%s = %q: Usable %s Online %s CPUs %d", fuzzFiles[i], content, topo.Usable, topo.Online, len(topo.CPUs))
		}
		for _, c := range topo.CPUs {
			if c.Package < 0 || c.Package >= len(topo.Packages) || c.Core < 0 || c.Core >= len(topo.Cores) ||
				!topo.Cores[c.Core].CPUs.Contains(c.ID) || !topo.Packages[c.Package].CPUs.IsSubsetOf(topo.Online) {
				t.Fatalf("%s = %q: CPU %+v inconsistent with its groups", fuzzFiles[i], content, c)
			}
		}
		if d := topo.Distances; d != nil && (len(d.Matrix) != len(topo.Nodes) || len(d.Nodes) != len(topo.Nodes)) {
			t.Fatalf("%s = %q: %d nodes, distance table %v", fuzzFiles[i], content, len(topo.Nodes), d)
		}
	})
}
