package topology

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/klauspost/cpuid/v2"

	"github.com/numasteal/numasteal/topology/cpuset"
)

func TestCachesFromCPUID(t *testing.T) {
	topo := &Topology{
		Packages: []Group{{Index: 0, CPUs: cpuset.Range(0, 3)}, {Index: 1, CPUs: cpuset.Range(4, 7)}},
		Cores: []Group{
			{Index: 0, CPUs: cpuset.Of(0, 1)}, {Index: 1, CPUs: cpuset.Of(2, 3)},
			{Index: 2, CPUs: cpuset.Of(4, 5)}, {Index: 3, CPUs: cpuset.Of(6, 7)},
		},
	}
	got := cachesFromCPUID(topo, cpuidCaches{l1d: 48 << 10, l1i: 0, l2: 2 << 20, l3: 32 << 20, line: 64})
	var desc []string
	for _, c := range got {
		desc = append(desc, fmt.Sprintf("L%d%s %dK %s line %d", c.Level, c.Type[:1], c.SizeBytes>>10, c.CPUs, c.LineSize))
	}
	want := []string{
		"L1d 48K 0-1 line 64", "L1d 48K 2-3 line 64", "L1d 48K 4-5 line 64", "L1d 48K 6-7 line 64",
		"L2u 2048K 0-1 line 64", "L2u 2048K 2-3 line 64", "L2u 2048K 4-5 line 64", "L2u 2048K 6-7 line 64",
		"L3u 32768K 0-3 line 64", "L3u 32768K 4-7 line 64",
	}
	if !slices.Equal(desc, want) {
		t.Errorf("cachesFromCPUID =\n%q\nwant\n%q", desc, want)
	}
	if got := cachesFromCPUID(topo, cpuidCaches{l1d: -1, l1i: -1, l2: -1, l3: -1}); len(got) != 0 {
		t.Errorf("unknown sizes gave caches %v", got)
	}
}

func TestCPUIDCachesNote(t *testing.T) {
	for _, tc := range []struct {
		c    cpuidCaches
		want string
	}{
		{cpuidCaches{l1d: 48 << 10, l1i: 32 << 10, l2: 1 << 20, l3: 32 << 20},
			"no cache directories in sysfs: L1d, L1i, L2, L3 sizes from CPUID (L1 and L2 assumed per core, L3 per package)"},
		// A VM whose CPUID reports no L3 (seen on AMD EPYC guests).
		{cpuidCaches{l1d: 48 << 10, l1i: 32 << 10, l2: 1 << 20},
			"no cache directories in sysfs: L1d, L1i, L2 sizes from CPUID (L1 and L2 assumed per core, L3 per package); CPUID reports no L3"},
		{cpuidCaches{l1d: -1, l1i: -1, l2: -1, l3: -1},
			"no cache directories in sysfs and no cache sizes from CPUID: caches unknown"},
	} {
		if got := tc.c.note(); got != tc.want {
			t.Errorf("note(%+v) =\n%q\nwant\n%q", tc.c, got, tc.want)
		}
	}
	// No L3 reported: no L3 instance is invented.
	topo := &Topology{
		Packages: []Group{{Index: 0, CPUs: cpuset.Range(0, 1)}},
		Cores:    []Group{{Index: 0, CPUs: cpuset.Of(0)}, {Index: 1, CPUs: cpuset.Of(1)}},
	}
	for _, c := range cachesFromCPUID(topo, cpuidCaches{l1d: 48 << 10, l2: 1 << 20}) {
		if c.Level == 3 {
			t.Errorf("cachesFromCPUID invented an L3: %+v", c)
		}
	}
}

// TestLiveCPUID checks that liveCPUIDCaches reports each level CPUID gives
// under its own name (levels CPUID leaves out, such as a VM's L3, stay
// absent) and that CPU identification comes from CPUID.
func TestLiveCPUID(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("CPUID cache sizes are an x86 feature")
	}
	c := liveCPUIDCaches()
	k := cpuid.CPU.Cache
	if c.l1d != int64(k.L1D) || c.l1i != int64(k.L1I) || c.l2 != int64(k.L2) || c.l3 != int64(k.L3) || c.line != cpuid.CPU.CacheLine {
		t.Errorf("liveCPUIDCaches = %+v, CPUID reports %+v (line %d)", c, k, cpuid.CPU.CacheLine)
	}
	if info := liveCPUInfo(); !info.FromCPUID || !slices.IsSorted(info.Features) {
		t.Errorf("liveCPUInfo = %+v", info)
	}
	t.Logf("CPUID caches: %+v", c)
}
