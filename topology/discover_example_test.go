package topology_test

import (
	"fmt"

	"github.com/numasteal/numasteal/topology"
)

// Discover reads a dump: testdata/tiny is a 4-CPU machine (2 cores of 2
// threads, 2 NUMA nodes) whose process sits in a cgroup v2 that allows
// CPUs 0-2 and 1.5 CPUs' worth of time.
func ExampleDiscover() {
	topo, err := topology.Discover(topology.WithRoot("testdata/tiny"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("arch:", topo.Arch, "live:", topo.Live)
	fmt.Println("online:", topo.Online, "usable:", topo.Usable)
	fmt.Println("packages:", len(topo.Packages), "cores:", len(topo.Cores))
	for _, n := range topo.Nodes {
		fmt.Printf("node %d: cpus %s usable %s memory %d MiB\n", n.ID, n.CPUs, n.Usable, n.MemoryBytes>>20)
	}
	fmt.Println("distance 0->1:", topo.Distances.Between(0, 1))
	for _, c := range topo.Caches {
		fmt.Printf("L%d %s %d KiB on %s\n", c.Level, c.Type, c.SizeBytes>>10, c.CPUs)
	}
	fmt.Printf("quota: %.1f CPUs, parallelism %d\n", topo.Quota.Parallelism(), topo.EffectiveParallelism())
	fmt.Println("NodeOf(3):", topo.NodeOf(3))
	// Output:
	// arch: x86_64 live: false
	// online: 0-3 usable: 0-2
	// packages: 1 cores: 2
	// node 0: cpus 0-1 usable 0-1 memory 1024 MiB
	// node 1: cpus 2-3 usable 2 memory 1024 MiB
	// distance 0->1: 20
	// L1 data 32 KiB on 0-1
	// L1 data 32 KiB on 2-3
	// L2 unified 1024 KiB on 0-1
	// L2 unified 1024 KiB on 2-3
	// L3 unified 8192 KiB on 0-3
	// quota: 1.5 CPUs, parallelism 2
	// NodeOf(3): 1
}
