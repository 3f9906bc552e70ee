package topology

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// Discover reads the machine's topology: the live machine by default, or
// the sysfs/procfs dump below WithRoot's directory.
//
// It reads, in this order: the CPU masks and each online CPU's topology
// files (packages, dies, clusters, cores); the caches (cache/indexN, or on
// a live machine whose sysfs has none, CPUID); cpu_capacity and cpufreq for
// CPU kinds; the NUMA nodes with their memory and distances; the cgroup
// cpuset and CPU quota; on a live machine the affinity mask and CPUID; and
// proc/cpuinfo. Files a kernel may lack are optional and replaced by the
// fallbacks documented on each field; a file that exists but is malformed
// makes Discover fail with a *FileError naming it.
func Discover(opts ...Option) (*Topology, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	d := &discoverer{
		r:   newReader(cfg.root),
		log: cfg.logger,
		t:   &Topology{Root: cfg.root, Live: cfg.root == "/"},
	}
	defer d.r.close()
	if err := d.run(); err != nil {
		return nil, err
	}
	return d.t, nil
}

// discoverer holds the state of one Discover call.
type discoverer struct {
	r   *reader
	log *zap.Logger
	t   *Topology
}

// note records an oddity in Topology.Notes and logs it.
func (d *discoverer) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	d.t.Notes = append(d.t.Notes, s)
	d.log.Debug("topology: " + s)
}

// debug logs a fallback that is too ordinary for a note.
func (d *discoverer) debug(msg string, fields ...zap.Field) {
	d.log.Debug("topology: "+msg, fields...)
}

func (d *discoverer) run() error {
	t := d.t
	if err := d.scanCPUs(); err != nil {
		return err
	}
	if err := d.buildGroups(); err != nil {
		return err
	}
	if err := d.readSysfsCaches(); err != nil {
		return err
	}
	if len(t.Caches) == 0 && t.Live {
		c := liveCPUIDCaches()
		t.Caches = cachesFromCPUID(t, c)
		d.note("%s", c.note())
	}
	if err := d.readKinds(); err != nil {
		return err
	}
	ns, err := d.readNodes()
	if err != nil {
		return err
	}
	if err := d.restrict(ns); err != nil {
		return err
	}
	if err := d.readDistances(ns); err != nil {
		return err
	}
	return d.identify()
}

// restrict computes Allowed, Usable, AllowedNodes and Nodes from the
// cgroup, the affinity mask (live) or proc/self/status (dump).
func (d *discoverer) restrict(ns nodeScan) error {
	t := d.t
	cg, err := d.readCgroups()
	if err != nil {
		return err
	}
	t.Quota = cg.quota
	allowed := t.Possible.Union(t.Online)
	if cg.hasCPUs {
		allowed = allowed.Intersect(cg.cpus)
		if !t.Online.IsSubsetOf(cg.cpus) {
			d.note("cgroup cpuset allows CPUs %s", cg.cpus)
		}
	}
	var onlineNodes cpuset.Set // the online nodes kept by readNodes
	for _, n := range ns.nodes {
		onlineNodes.Add(n.ID)
	}
	allowedNodes := onlineNodes
	if cg.hasMems {
		allowedNodes = allowedNodes.Intersect(cg.mems)
		if !onlineNodes.IsSubsetOf(cg.mems) {
			d.note("cgroup cpuset allows NUMA nodes %s", cg.mems)
		}
	}
	statusCPUs, statusMems, err := d.status()
	if err != nil {
		return err
	}
	if t.Live {
		aff, err := schedAffinity()
		if err != nil {
			return err
		}
		allowed = allowed.Intersect(aff)
	} else if statusCPUs != nil {
		allowed = allowed.Intersect(*statusCPUs)
	}
	if statusMems != nil {
		allowedNodes = allowedNodes.Intersect(*statusMems)
	}
	t.Allowed = allowed
	t.AllowedNodes = allowedNodes
	t.Usable = t.Online.Intersect(allowed)
	if t.Usable.IsEmpty() {
		return fmt.Errorf("%w: online CPUs %s, allowed %s", ErrNoUsableCPU, t.Online, allowed)
	}
	for i := range t.CPUs {
		t.CPUs[i].Usable = t.Usable.Contains(t.CPUs[i].ID)
	}
	// A memory-less node is never in cpuset.mems or Mems_allowed (the
	// kernel only lists nodes with memory there), but its CPUs may be
	// usable: such a node is kept when it has a usable CPU.
	for _, n := range ns.nodes {
		n.Usable = n.CPUs.Intersect(allowed)
		if allowedNodes.Contains(n.ID) || !n.HasMemory && !n.Usable.IsEmpty() {
			t.Nodes = append(t.Nodes, n)
		}
	}
	if len(t.Nodes) == 0 {
		d.note("no allowed NUMA node among %s; keeping them all", onlineNodes)
		for _, n := range ns.nodes {
			n.Usable = n.CPUs.Intersect(allowed)
			t.Nodes = append(t.Nodes, n)
		}
	}
	return nil
}

// status reads Cpus_allowed_list and Mems_allowed_list from
// proc/self/status; nil when absent.
func (d *discoverer) status() (cpus, mems *cpuset.Set, err error) {
	const p = "proc/self/status"
	data, ok, err := d.r.read(p)
	if err != nil || !ok {
		return nil, nil, err
	}
	c, m, hasC, hasM := parseStatusLists(data)
	parse := func(s string) (*cpuset.Set, error) {
		set, err := cpuset.Parse(s)
		if err != nil {
			return nil, &FileError{Path: p, Text: clip(s), Err: err}
		}
		return &set, nil
	}
	if hasC {
		if cpus, err = parse(c); err != nil {
			return nil, nil, err
		}
	}
	if hasM {
		if mems, err = parse(m); err != nil {
			return nil, nil, err
		}
	}
	return cpus, mems, nil
}

// identify fills Arch and CPUInfo.
func (d *discoverer) identify() error {
	t := d.t
	ci := cpuinfo{family: -1, modelID: -1}
	// The first processor's block is all we parse: 16 kB hold it on every
	// architecture (x86 blocks are about 1.5 kB, s390 puts a short header
	// first), where the whole file of a big machine is hundreds of kB.
	data, ok, err := d.r.readLimit("proc/cpuinfo", 16<<10)
	if err != nil {
		return err
	}
	if ok {
		var line string
		if ci, line, err = parseCPUInfo(data); err != nil {
			return &FileError{Path: "proc/cpuinfo", Text: clip(line), Err: err}
		}
	}
	t.CPUInfo = CPUInfo{Vendor: ci.vendor, Model: ci.model, Family: ci.family, ModelID: ci.modelID}
	if t.Live {
		t.Arch = liveArch()
		if info := liveCPUInfo(); info.FromCPUID {
			t.CPUInfo = info
		}
		return nil
	}
	if data, ok, err := d.r.read("proc/hwloc-nofile-info"); err != nil {
		return err
	} else if ok {
		t.Arch = parseArchitectureLine(data)
	}
	if t.Arch == "" {
		t.Arch = ci.archHint
	}
	return nil
}
