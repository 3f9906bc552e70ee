package topology

import (
	"github.com/numasteal/numasteal/topology/cpuset"
)

// The kernel describes each CPU's place with a sibling mask per level
// (cpuN/topology/package_cpus, die_cpus, cluster_cpus, core_cpus, under
// older names core_siblings and thread_siblings, as lists or masks) and an
// id per level (physical_package_id, die_id, cluster_id, core_id).
//
// We build the groups from the masks, not from the ids, as hwloc does:
// ids repeat across packages (core_id) or are -1 where the platform has no
// notion of them (s390 and old POWER kernels report physical_package_id
// -1). A package is therefore "the CPUs in this CPU's package_cpus mask":
// on s390, where package ids are -1, the packages are the core_siblings
// masks (the 8 "sockets" of 20s390-2g6s4c); where core_siblings equals
// thread_siblings (POWER7 with -1 ids) that yields one package per core,
// the same choice hwloc makes. The ids are kept in Group.ID and CPU.*ID.
//
// Levels nest: each mask is cut down to the CPUs of the enclosing group, so
// a buggy mask cannot make a core straddle two packages. Only the first
// CPU of each group has its mask read (later members are already placed),
// which is also what hwloc does.
//
// One quirk: AMD Bulldozer/Piledriver compute units list both integer cores
// of a unit as thread siblings although they are separate cores with their
// own core_id (64amd64-4s2n4ca2co). Within one core mask, CPUs whose
// core_id differs from the first CPU's are split off into cores of their
// own, which generalises hwloc's is_amd_with_CU rule.

// topoFiles are the per-level file names. The bitmasks come first: they
// exist on every kernel, hwloc reads them, and where an old kernel's list
// and mask disagree (64amd64-4s2n4ca2co's caches) the mask is right.
type topoFiles struct {
	pkg, die, cluster, core *alts
}

func newTopoFiles() topoFiles {
	return topoFiles{
		pkg:     newAlts(false, "package_cpus", "core_siblings", "package_cpus_list", "core_siblings_list"),
		die:     newAlts(true, "die_cpus", "die_cpus_list"),
		cluster: newAlts(true, "cluster_cpus", "cluster_cpus_list"),
		core:    newAlts(false, "core_cpus", "thread_siblings", "core_cpus_list", "thread_siblings_list"),
	}
}

// levelOf tracks which group of one level each CPU belongs to.
type levelOf struct {
	of     []int // CPU id → index in groups, -1 when not yet placed
	groups []Group
}

func newLevelOf(n int) *levelOf {
	l := &levelOf{of: make([]int, n)}
	for i := range l.of {
		l.of[i] = -1
	}
	return l
}

// add creates a group of the CPUs of span not yet placed, plus cpu.
func (l *levelOf) add(id int, span cpuset.Set, cpu int) *Group {
	var members cpuset.Set
	for c := range span.All() {
		if c < len(l.of) && l.of[c] < 0 {
			members.Add(c)
		}
	}
	members.Add(cpu)
	idx := len(l.groups)
	for c := range members.All() {
		l.of[c] = idx
	}
	l.groups = append(l.groups, Group{Index: idx, ID: id, CPUs: members})
	return &l.groups[idx]
}

// coreFacts are the per-CPU files every CPU needs read: its core mask and
// core_id. They are read up front, in parallel; the masks of the other
// levels are read only for the first CPU of each group.
type coreFacts struct {
	span cpuset.Set
	id   int // core_id, -1 when absent
}

func (d *discoverer) readCoreFacts(cpus []int, files topoFiles) ([]coreFacts, error) {
	facts := make([]coreFacts, len(cpus))
	read := func(r *reader, i int, a *alts) error {
		c := cpus[i]
		span, _, err := r.setAlt(cpuPath(c, "topology"), a)
		if err != nil {
			return err
		}
		id, found, err := r.int(cpuPath(c, "topology/core_id"))
		if err != nil {
			return err
		}
		if !found {
			id = -1
		}
		facts[i] = coreFacts{span: span, id: id}
		return nil
	}
	// The first CPU teaches files.core which name this kernel uses; the
	// others start from a copy of what it learnt.
	if err := read(d.r, 0, files.core); err != nil {
		return nil, err
	}
	err := d.parallel(len(cpus)-1, func(r *reader, i int) error {
		a := *files.core
		return read(r, i+1, &a)
	})
	return facts, err
}

// buildGroups fills CPUs, Packages, Dies, Clusters and Cores.
func (d *discoverer) buildGroups() error {
	t := d.t
	n := t.Online.Last() + 1
	files := newTopoFiles()
	pkgs, dies, clusters, cores := newLevelOf(n), newLevelOf(n), newLevelOf(n), newLevelOf(n)
	cpus := t.Online.IDs()
	pos := make([]int, n) // CPU id → index in cpus and facts
	for i, c := range cpus {
		pos[c] = i
	}
	facts, err := d.readCoreFacts(cpus, files)
	if err != nil {
		return err
	}
	coreID := func(c int) int { return facts[pos[c]].id }
	readID := func(c int, name string) (int, error) {
		v, ok, err := d.r.int(cpuPath(c, "topology/"+name))
		if !ok {
			v = -1
		}
		return v, err
	}
	var noTopology cpuset.Set

	for c := range t.Online.All() {
		dir := cpuPath(c, "topology")
		// Package.
		if pkgs.of[c] < 0 {
			span, ok, err := d.r.setAlt(dir, files.pkg)
			if err != nil {
				return err
			}
			if !ok {
				noTopology.Add(c)
			}
			id, err := readID(c, "physical_package_id")
			if err != nil {
				return err
			}
			pkgs.add(id, span.Intersect(t.Online), c)
		}
		pkg := &pkgs.groups[pkgs.of[c]]
		// Die: the package when the kernel has no die masks.
		if dies.of[c] < 0 {
			span, ok, err := d.r.setAlt(dir, files.die)
			if err != nil {
				return err
			}
			id := -1
			if ok {
				if id, err = readID(c, "die_id"); err != nil {
					return err
				}
			} else {
				span = pkg.CPUs
			}
			dies.add(id, span.Intersect(pkg.CPUs), c)
		}
		die := &dies.groups[dies.of[c]]
		// Cluster: the core when the kernel has no cluster masks (filled
		// in below, once the core is known).
		parent := die.CPUs
		clusterFromCore := false
		if clusters.of[c] < 0 {
			span, ok, err := d.r.setAlt(dir, files.cluster)
			if err != nil {
				return err
			}
			if ok {
				id, err := readID(c, "cluster_id")
				if err != nil {
					return err
				}
				clusters.add(id, span.Intersect(die.CPUs), c)
			} else {
				clusterFromCore = true
			}
		}
		if !clusterFromCore {
			parent = clusters.groups[clusters.of[c]].CPUs
		}
		// Core.
		if cores.of[c] < 0 {
			f := facts[pos[c]]
			span := f.span.Intersect(parent)
			if span.Len() > 1 && f.id >= 0 {
				// Split compute units: keep the siblings with our core_id.
				var same cpuset.Set
				for s := range span.All() {
					if sid := coreID(s); sid == f.id || sid < 0 {
						same.Add(s)
					}
				}
				span = same
			}
			core := cores.add(f.id, span, c)
			if clusterFromCore {
				clusters.add(-1, core.CPUs, c)
			}
		}
	}
	if !noTopology.IsEmpty() {
		d.note("online CPUs %s have no topology files; each is its own core and package", noTopology)
	}

	t.Packages, t.Dies, t.Clusters, t.Cores = pkgs.groups, dies.groups, clusters.groups, cores.groups
	t.CPUs = make([]CPU, 0, t.Online.Len())
	for c := range t.Online.All() {
		cpu := CPU{
			ID:      c,
			Package: pkgs.of[c], Die: dies.of[c], Cluster: clusters.of[c], Core: cores.of[c],
			Node: -1, Kind: -1,
		}
		cpu.PackageID = t.Packages[cpu.Package].ID
		cpu.DieID = t.Dies[cpu.Die].ID
		cpu.ClusterID = t.Clusters[cpu.Cluster].ID
		cpu.CoreID = coreID(c)
		t.CPUs = append(t.CPUs, cpu)
	}
	return nil
}
