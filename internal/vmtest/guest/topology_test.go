package guest

import (
	"slices"
	"testing"

	"github.com/numasteal/numasteal/internal/vmtest"
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// Cache sizes of QEMU's Intel models (shared/tools/numa-vm/README.md).
const (
	l2Bytes = 4 << 20
	l3Bytes = 16 << 20
)

// TestDiscover checks topology.Discover on the live guest against the
// layout: CPUs, packages, cores and SMT threads, nodes with their CPUs and
// memory (CPU-less and memory-less ones included), the distance table, and
// the L2/L3 sharing QEMU models correctly.
func TestDiscover(t *testing.T) {
	l := layout(t)
	nodes, cpus := expect(t, l)
	topo, err := topology.Discover()
	if err != nil {
		t.Fatal(err)
	}
	all := cpuset.Range(0, l.NumCPU()-1)
	if !topo.Usable.Equal(all) || !topo.Online.Equal(all) {
		t.Errorf("Usable = %s, Online = %s; want %s", topo.Usable, topo.Online, all)
	}
	if got, want := len(topo.Packages), l.Sockets; got != want {
		t.Errorf("%d packages, want %d", got, want)
	}
	if got, want := len(topo.Cores), l.Sockets*l.Dies*l.Cores; got != want {
		t.Errorf("%d cores, want %d", got, want)
	}
	if len(topo.CPUs) != len(cpus) {
		t.Fatalf("%d CPUs, want %d", len(topo.CPUs), len(cpus))
	}
	for i, c := range topo.CPUs {
		w := cpus[i]
		if c.ID != w.ID || c.PackageID != w.PackageID || c.CoreID != w.CoreID || c.Node != w.Node {
			t.Errorf("CPU %d: package %d core %d node %d; want CPU %d package %d core %d node %d",
				c.ID, c.PackageID, c.CoreID, c.Node, w.ID, w.PackageID, w.CoreID, w.Node)
		}
		if got := topo.Cores[c.Core].CPUs; !got.Equal(w.Siblings) {
			t.Errorf("CPU %d: core CPUs %s, want SMT siblings %s", c.ID, got, w.Siblings)
		}
		if got := topo.Packages[c.Package].CPUs; got.Len() != l.Dies*l.Cores*l.Threads || !got.Contains(c.ID) {
			t.Errorf("CPU %d: package CPUs %s", c.ID, got)
		}
	}
	if len(topo.Nodes) != len(nodes) {
		t.Fatalf("%d nodes, want %d", len(topo.Nodes), len(nodes))
	}
	for i, n := range topo.Nodes {
		w := nodes[i]
		if n.ID != w.ID || !n.CPUs.Equal(w.CPUs) || !n.Usable.Equal(w.CPUs) {
			t.Errorf("node %d: CPUs %s usable %s; want node %d CPUs %s", n.ID, n.CPUs, n.Usable, w.ID, w.CPUs)
		}
		// The kernel keeps some of node 0's memory for itself, so MemTotal
		// is below the request, but never below half of it.
		limit := int64(w.MemMB) << 20
		if n.HasMemory != (w.MemMB > 0) || n.MemoryBytes > limit || n.MemoryBytes <= limit/2 && w.MemMB > 0 {
			t.Errorf("node %d: memory %d bytes (has memory %v), want up to %d MiB", n.ID, n.MemoryBytes, n.HasMemory, w.MemMB)
		}
	}
	checkDistances(t, topo.Distances, l, nodes)
	checkCaches(t, topo, cpus)
	t.Logf("Discover: %d CPUs, %d packages, %d cores, %d nodes, %d caches, notes %q",
		len(topo.CPUs), len(topo.Packages), len(topo.Cores), len(topo.Nodes), len(topo.Caches), topo.Notes)
}

func checkDistances(t *testing.T, d *topology.Distances, l vmtest.Layout, nodes []vmtest.Node) {
	t.Helper()
	if d == nil {
		t.Fatal("no distance table")
	}
	ids := make([]int, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	if !slices.Equal(d.Nodes, ids) {
		t.Fatalf("distance table over nodes %v, want %v", d.Nodes, ids)
	}
	for _, a := range nodes {
		for _, b := range nodes {
			if got, want := d.Between(a.ID, b.ID), l.Distance(a.QEMU, b.QEMU); got != want {
				t.Errorf("distance %d->%d = %d, want %d", a.ID, b.ID, got, want)
			}
		}
	}
}

// checkCaches checks that each CPU has an L2 shared with its SMT siblings
// and an L3 shared with its die, sized as QEMU's Intel models say. (QEMU 7.2
// wrongly makes L1 private to each thread, so L1 sharing is not checked.)
func checkCaches(t *testing.T, topo *topology.Topology, cpus []vmtest.CPU) {
	t.Helper()
	for _, c := range cpus {
		var die cpuset.Set
		for _, o := range cpus {
			if o.PackageID == c.PackageID && o.DieID == c.DieID {
				die.Add(o.ID)
			}
		}
		for _, want := range []struct {
			level int
			size  int64
			cpus  cpuset.Set
		}{{2, l2Bytes, c.Siblings}, {3, l3Bytes, die}} {
			found := false
			for _, k := range topo.Caches {
				if k.Level == want.level && k.CPUs.Contains(c.ID) {
					found = true
					if !k.CPUs.Equal(want.cpus) || k.SizeBytes != want.size {
						t.Errorf("CPU %d: L%d %d bytes on CPUs %s, want %d bytes on %s", c.ID, k.Level, k.SizeBytes, k.CPUs, want.size, want.cpus)
					}
				}
			}
			if !found {
				t.Errorf("CPU %d: no L%d cache", c.ID, want.level)
			}
		}
	}
}
