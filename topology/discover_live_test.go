package topology_test

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// TestDiscoverLive reads the machine the test runs on and checks it against
// what the Go runtime and the kernel say independently.
func TestDiscoverLive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("live discovery reads Linux's /sys")
	}
	topo, err := topology.Discover()
	if err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if !topo.Live || topo.Root != "/" {
		t.Errorf("Live %v Root %q, want the live machine", topo.Live, topo.Root)
	}
	// runtime.NumCPU counts the affinity mask at start-up; the cgroup
	// cpuset is always a superset of it (the kernel enforces that).
	if got, want := topo.Usable.Len(), runtime.NumCPU(); got != want {
		t.Errorf("Usable = %s (%d CPUs), runtime.NumCPU() = %d", topo.Usable, got, want)
	}
	if !topo.Usable.IsSubsetOf(topo.Online) || !topo.Usable.IsSubsetOf(topo.Allowed) {
		t.Errorf("Usable %s not within Online %s and Allowed %s", topo.Usable, topo.Online, topo.Allowed)
	}
	if data, err := os.ReadFile("/sys/devices/system/node/online"); err == nil {
		want, err := cpuset.Parse(string(data))
		if err != nil {
			t.Fatal(err)
		}
		var got cpuset.Set
		for _, n := range topo.Nodes {
			got.Add(n.ID)
		}
		if !got.IsSubsetOf(want) || got.IsEmpty() {
			t.Errorf("nodes %s, kernel's online nodes %s", got, want)
		}
		t.Logf("nodes %s (kernel online %s)", got, want)
	}
	if len(topo.Packages) == 0 || len(topo.Cores) == 0 || len(topo.Cores) > topo.Online.Len() {
		t.Errorf("%d packages, %d cores for %d CPUs", len(topo.Packages), len(topo.Cores), topo.Online.Len())
	}
	for _, c := range topo.CPUs {
		if c.Usable != topo.Usable.Contains(c.ID) {
			t.Errorf("CPU %d Usable %v", c.ID, c.Usable)
		}
	}
	wantArch := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i686", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}[runtime.GOARCH]
	if wantArch != "" && topo.Arch != wantArch && !(runtime.GOARCH == "386" && strings.HasPrefix(topo.Arch, "i")) {
		t.Errorf("Arch = %q, want %q", topo.Arch, wantArch)
	}
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "386" {
		if !topo.CPUInfo.FromCPUID || topo.CPUInfo.Vendor == "" || len(topo.CPUInfo.Features) == 0 {
			t.Errorf("CPUInfo = %+v, want CPUID's", topo.CPUInfo)
		}
	}
	checkLiveCaches(t, topo)
	t.Logf("%s %q: usable %s, %d packages, %d cores, %d caches, quota %v, notes %q",
		topo.Arch, topo.CPUInfo.Model, topo.Usable, len(topo.Packages), len(topo.Cores), len(topo.Caches), topo.Quota, topo.Notes)
}
