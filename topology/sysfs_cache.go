package topology

import (
	"fmt"
	"slices"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// maxCacheIndex bounds the cache/indexN directories looked at per CPU
// (hwloc looks at 10; no CPU has more than 5).
const maxCacheIndex = 16

// parseCacheType maps cache/indexN/type to a CacheType.
func parseCacheType(t string) (CacheType, error) {
	switch t {
	case "Data":
		return Data, nil
	case "Instruction":
		return Instruction, nil
	case "Unified":
		return Unified, nil
	}
	return "", fmt.Errorf("cache type is not Data, Instruction or Unified: %w", ErrSyntax)
}

// readSysfsCaches fills Caches from cpuN/cache/indexM, one instance per
// distinct shared_cpu_map, as hwloc does: the first online CPU of each
// shared set creates the instance, the others are skipped without reading
// their files. shared_cpu_map is read rather than shared_cpu_list: on old
// AMD kernels the list omits the compute-unit sibling that the map (and
// hwloc) includes (64amd64-4s2n4ca2co). An empty shared_cpu_map (ia64
// reports some that way) means the CPU's core. When the first online CPU
// has no cache directory, no CPU is assumed to have one. Memory-side
// caches live under the node directories and are not read.
func (d *discoverer) readSysfsCaches() error {
	t := d.t
	shared := newAlts(true, "shared_cpu_map", "shared_cpu_list")
	var covered [maxCacheIndex]cpuset.Set
	for _, cpu := range t.CPUs {
		c := cpu.ID
		for j := 0; j < maxCacheIndex; j++ {
			if covered[j].Contains(c) {
				continue
			}
			dir := cpuPath(c, "cache/index"+itoa(j))
			span, ok, err := d.r.setAlt(dir, shared)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			level, ok, err := d.r.int(dir + "/level")
			if err != nil {
				return err
			}
			if !ok {
				continue // hwloc skips caches without a level too
			}
			if level < 1 || level > 9 {
				return &FileError{Path: dir + "/level", Text: itoa(level), Err: fmt.Errorf("cache level: %w", ErrRange)}
			}
			ctype := Unified
			if s, ok, err := d.r.text(dir + "/type"); err != nil {
				return err
			} else if ok {
				if ctype, err = parseCacheType(s); err != nil {
					return &FileError{Path: dir + "/type", Text: clip(s), Err: err}
				}
			}
			var size int64
			if s, ok, err := d.r.text(dir + "/size"); err != nil {
				return err
			} else if ok {
				if size, err = parseCacheSize(s); err != nil {
					return &FileError{Path: dir + "/size", Text: clip(s), Err: err}
				}
			}
			line, _, err := d.r.int(dir + "/coherency_line_size")
			if err != nil {
				return err
			}
			ways, _, err := d.r.int(dir + "/ways_of_associativity")
			if err != nil {
				return err
			}
			if span.IsEmpty() {
				span = t.Cores[cpu.Core].CPUs
			}
			var members cpuset.Set
			for m := range span.Intersect(t.Online).All() {
				if !covered[j].Contains(m) {
					members.Add(m)
					covered[j].Add(m)
				}
			}
			members.Add(c)
			covered[j].Add(c)
			t.Caches = append(t.Caches, Cache{
				Level: level, Type: ctype, SizeBytes: size,
				LineSize: max(line, 0), Ways: max(ways, 0), CPUs: members,
			})
		}
	}
	sortCaches(t.Caches)
	return nil
}

// sortCaches orders caches by level, then type, then first CPU.
func sortCaches(cs []Cache) {
	slices.SortStableFunc(cs, func(a, b Cache) int {
		if a.Level != b.Level {
			return a.Level - b.Level
		}
		if a.Type != b.Type {
			if a.Type < b.Type {
				return -1
			}
			return 1
		}
		return a.CPUs.First() - b.CPUs.First()
	})
}
