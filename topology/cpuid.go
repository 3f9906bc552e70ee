package topology

import (
	"slices"
	"strings"

	"github.com/klauspost/cpuid/v2"
)

// cpuidCaches is what CPUID reports about the caches of the processor we
// run on: sizes in bytes (0 or less when unknown) and the line size.
type cpuidCaches struct {
	l1d, l1i, l2, l3 int64
	line             int
}

// liveCPUIDCaches reads the cache sizes klauspost/cpuid detected at start.
func liveCPUIDCaches() cpuidCaches {
	c := cpuid.CPU
	return cpuidCaches{
		l1d: int64(c.Cache.L1D), l1i: int64(c.Cache.L1I),
		l2: int64(c.Cache.L2), l3: int64(c.Cache.L3),
		line: c.CacheLine,
	}
}

// note says where the caches of a machine without sysfs cache directories
// came from and which levels CPUID did not report, so that a reader of
// Topology.Notes (and numasteal topo) sees what is missing rather than an
// invented level.
func (c cpuidCaches) note() string {
	var have, missing []string
	for _, l := range []struct {
		name string
		size int64
	}{{"L1d", c.l1d}, {"L1i", c.l1i}, {"L2", c.l2}, {"L3", c.l3}} {
		if l.size > 0 {
			have = append(have, l.name)
		} else {
			missing = append(missing, l.name)
		}
	}
	if len(have) == 0 {
		return "no cache directories in sysfs and no cache sizes from CPUID: caches unknown"
	}
	s := "no cache directories in sysfs: " + strings.Join(have, ", ") + " sizes from CPUID (L1 and L2 assumed per core, L3 per package)"
	if len(missing) > 0 {
		s += "; CPUID reports no " + strings.Join(missing, ", ")
	}
	return s
}

// cachesFromCPUID builds cache instances for a live machine whose sysfs has
// no cache directories (some VMs and sandboxes). CPUID gives sizes but not
// sharing, so we assume the usual arrangement: L1 data, L1 instruction and
// L2 are private to a core (shared by its SMT threads) and L3 is shared by
// a package. That is wrong for parts whose L2 is shared by a cluster of
// cores (Intel Atom/E-cores, Bulldozer) or whose L3 is split into several
// CCXs per package (AMD Zen): there the instances are fewer (L2) or more
// (L3) than real, but every size is right, which is what placement
// heuristics read.
func cachesFromCPUID(t *Topology, c cpuidCaches) []Cache {
	var out []Cache
	line := max(c.line, 0)
	perCore := func(level int, typ CacheType, size int64) {
		if size <= 0 {
			return
		}
		for _, core := range t.Cores {
			out = append(out, Cache{Level: level, Type: typ, SizeBytes: size, LineSize: line, CPUs: core.CPUs.Clone()})
		}
	}
	perCore(1, Data, c.l1d)
	perCore(1, Instruction, c.l1i)
	perCore(2, Unified, c.l2)
	if c.l3 > 0 {
		for _, p := range t.Packages {
			out = append(out, Cache{Level: 3, Type: Unified, SizeBytes: c.l3, LineSize: line, CPUs: p.CPUs.Clone()})
		}
	}
	sortCaches(out)
	return out
}

// liveCPUInfo identifies the processor we run on from CPUID.
func liveCPUInfo() CPUInfo {
	c := cpuid.CPU
	info := CPUInfo{
		Vendor:    c.VendorString,
		Model:     c.BrandName,
		Family:    c.Family,
		ModelID:   c.Model,
		Features:  c.FeatureSet(),
		FromCPUID: c.VendorString != "" || c.BrandName != "",
	}
	slices.Sort(info.Features)
	if !info.FromCPUID {
		info.Family, info.ModelID = -1, -1
	}
	return info
}
