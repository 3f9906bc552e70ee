package domains_test

import (
	"fmt"

	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/domains"
)

// Build on topology's testdata/tiny: two cores of two threads, one per NUMA
// node, sharing one L3, of which the cgroup allows CPUs 0-2. The L3 is
// clipped to each node, so LLC adds nothing to SMT; CPU 2 is alone in its
// core, so its chain starts at NUMA.
func ExampleBuild() {
	topo, err := topology.Discover(topology.WithRoot("../testdata/tiny"))
	if err != nil {
		fmt.Println(err)
		return
	}
	doms, err := domains.Build(topo)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("NUMA distances:", doms.NUMADistances)
	for _, l := range doms.Levels {
		name := string(l.Name)
		if l.Name == domains.NUMA {
			name = fmt.Sprintf("NUMA/%d", l.Distance)
		}
		fmt.Printf("level %d %s: spans %v, imbalance_pct %d\n", l.Depth, name, l.Spans, l.Params.ImbalancePct)
	}
	for _, cpu := range []int{0, 2} {
		for _, d := range doms.Chain(cpu) {
			fmt.Printf("CPU %d %s: span %s, groups %v\n", cpu, d.Level.Name, d.Span, d.Groups)
		}
	}
	fmt.Println("CPU 2's widest cache-sharing domain:", doms.Highest(2, domains.FlagShareLLC))
	fmt.Println("CPU 0's first NUMA domain:", doms.Lowest(0, domains.FlagNUMA).Span)
	for _, n := range doms.Notes {
		fmt.Println("note:", n)
	}
	// Output:
	// NUMA distances: [10 20]
	// level 0 SMT: spans [0-1], imbalance_pct 110
	// level 1 NUMA/20: spans [0-2], imbalance_pct 125
	// CPU 0 SMT: span 0-1, groups [0 1]
	// CPU 0 NUMA: span 0-2, groups [0-1 2]
	// CPU 2 NUMA: span 0-2, groups [2 0-1]
	// CPU 2's widest cache-sharing domain: <nil>
	// CPU 0's first NUMA domain: 0-2
	// note: LLC span 0-2 of CPU 0 crosses its NUMA node; clipped to the node's CPUs
	// note: PACKAGE span 0-2 of CPU 0 crosses NUMA nodes (NUMA in package); the level is not used there, the NUMA levels describe it
}
