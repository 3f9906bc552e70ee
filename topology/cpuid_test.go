package topology

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

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

// TestLiveCPUID checks that CPUID, the fallback for sysfs without cache
// directories, reports the sizes the live test expects.
func TestLiveCPUID(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("CPUID cache sizes are an x86 feature")
	}
	c := liveCPUIDCaches()
	if c.l1d <= 0 || c.l2 <= 0 || c.line <= 0 {
		t.Errorf("CPUID caches = %+v, want L1d, L2 and line size", c)
	}
	if info := liveCPUInfo(); !info.FromCPUID || !slices.IsSorted(info.Features) {
		t.Errorf("liveCPUInfo = %+v", info)
	}
	t.Logf("CPUID caches: %+v", c)
}
