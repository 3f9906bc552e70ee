package topology_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/cpuid/v2"

	"github.com/numasteal/numasteal/topology"
)

// liveCache is one cache seen from one CPU: what both Discover and an
// independent read of sysfs or CPUID can say.
type liveCache struct {
	Level int
	Type  topology.CacheType
	Size  int64
}

func (c liveCache) String() string { return fmt.Sprintf("L%d %s %d B", c.Level, c.Type, c.Size) }

// checkLiveCaches compares the caches Discover found for the first online
// CPU with what the machine itself shows: sysfs's cache directories when
// there are any, else CPUID (Discover's fallback). Absent levels are a
// valid machine (VMs without an L3, parts without an L2): the test asks
// only that Discover neither drops nor invents one.
func checkLiveCaches(t *testing.T, topo *topology.Topology) {
	t.Helper()
	cpu := topo.Online.First()
	var got []liveCache
	for _, c := range topo.Caches {
		if c.CPUs.Contains(cpu) {
			got = append(got, liveCache{c.Level, c.Type, c.SizeBytes})
		}
	}
	want, source, err := sysfsCaches(cpu)
	if err != nil {
		t.Fatalf("reading sysfs caches of CPU %d: %v", cpu, err)
	}
	if want == nil {
		want, source = cpuidCaches(), "CPUID (no cache directories in sysfs)"
	}
	sortLive(got)
	sortLive(want)
	if !slices.Equal(got, want) {
		t.Errorf("caches of CPU %d: Discover found %v, %s shows %v", cpu, got, source, want)
	}
	t.Logf("caches of CPU %d from %s: %v", cpu, source, want)
}

// sysfsCaches reads /sys/devices/system/cpu/cpuN/cache/index*/ for cpu,
// nil when the directory holds no index (some VMs and sandboxes). Indexes
// without a level are skipped, as Discover (and hwloc) skip them.
func sysfsCaches(cpu int) ([]liveCache, string, error) {
	dir := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/cache", cpu)
	idx, err := filepath.Glob(filepath.Join(dir, "index[0-9]*"))
	if err != nil || len(idx) == 0 {
		return nil, "", err
	}
	var out []liveCache
	for _, d := range idx {
		level, err := os.ReadFile(filepath.Join(d, "level"))
		if err != nil {
			continue
		}
		l, err := strconv.Atoi(strings.TrimSpace(string(level)))
		if err != nil {
			return nil, "", fmt.Errorf("%s/level: %w", d, err)
		}
		typ, err := os.ReadFile(filepath.Join(d, "type"))
		if err != nil {
			return nil, "", err
		}
		size, err := os.ReadFile(filepath.Join(d, "size"))
		if err != nil {
			return nil, "", err
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(size)), "K"), 10, 64)
		if err != nil {
			return nil, "", fmt.Errorf("%s/size: %w", d, err)
		}
		out = append(out, liveCache{l, topology.CacheType(strings.ToLower(strings.TrimSpace(string(typ)))), kb << 10})
	}
	return out, "sysfs " + dir, nil
}

// cpuidCaches is what CPUID reports, read through klauspost/cpuid directly.
func cpuidCaches() []liveCache {
	var out []liveCache
	add := func(level int, typ topology.CacheType, size int) {
		if size > 0 {
			out = append(out, liveCache{level, typ, int64(size)})
		}
	}
	c := cpuid.CPU.Cache
	add(1, topology.Data, c.L1D)
	add(1, topology.Instruction, c.L1I)
	add(2, topology.Unified, c.L2)
	add(3, topology.Unified, c.L3)
	return out
}

func sortLive(cs []liveCache) {
	slices.SortFunc(cs, func(a, b liveCache) int {
		if a.Level != b.Level {
			return a.Level - b.Level
		}
		return strings.Compare(string(a.Type), string(b.Type))
	})
}
