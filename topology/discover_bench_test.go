package topology_test

import (
	"testing"

	"github.com/numasteal/numasteal/internal/corpus"
	"github.com/numasteal/numasteal/topology"
)

// BenchmarkDiscoverLargest reads the largest dump of the corpus (Itanium,
// 256 CPUs, 64 NUMA nodes, a 64x64 distance table). docs/bench-topology.md
// compares it with lstopo-no-graphics on the same root.
func BenchmarkDiscoverLargest(b *testing.B) {
	root := corpus.Extract(b, "256ia64-64n2s2c")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := topology.Discover(topology.WithRoot(root)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiscoverCaches reads a dump with full cache and cgroup
// information (2 sockets, 80 CPUs, 4 nodes).
func BenchmarkDiscoverCaches(b *testing.B) {
	root := corpus.Extract(b, "memorysidecaches")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := topology.Discover(topology.WithRoot(root)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiscoverLive reads the machine the benchmark runs on.
func BenchmarkDiscoverLive(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := topology.Discover(); err != nil {
			b.Fatal(err)
		}
	}
}
