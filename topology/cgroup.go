package topology

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// Cgroups restrict a process in two ways that matter here: the cpuset
// controller limits the CPUs and memory nodes it may use, and the cpu
// controller limits CPU time (a quota per period). Both are found the way
// hwloc and the Go runtime find them, entirely inside the root so that
// dumps carry their restrictions:
//
//  1. The mount table (proc/self/mountinfo, else proc/mounts) says where
//     each hierarchy is mounted: a cgroup2 mount whose cgroup.controllers
//     lists cpuset, a cgroup (v1) mount with the cpuset option, or the old
//     "cpuset" file system (whose files lack the "cpuset." prefix, as do
//     v1 mounts with the noprefix option). Without a mount table the
//     standard places are tried: sys/fs/cgroup (v2),
//     sys/fs/cgroup/cpuset (v1), dev/cpuset (old cpuset fs).
//  2. proc/self/cgroup says which cgroup the process is in: the "0::"
//     line for v2, the line listing the controller for v1; dumps without it
//     have proc/self/cpuset, which names the cpuset cgroup.
//  3. The files are read in that cgroup: cpuset.cpus.effective and
//     cpuset.mems.effective (v2: already the AND of all ancestors),
//     cpuset.cpus and cpuset.mems (v1, where children are subsets of their
//     parent), cpus and mems (old cpuset fs). A missing file restricts
//     nothing.
//  4. The quota is the most restrictive of cpu.max (v2) or
//     cpu.cfs_quota_us/cpu.cfs_period_us (v1) over the cgroup and its
//     ancestors up to the mount's root, as the Go runtime computes
//     GOMAXPROCS since Go 1.25.

type cgroupKind int

const (
	cgroupV2     cgroupKind = iota + 1 // cgroup2, cpuset.cpus.effective
	cgroupV1                           // cgroup v1, cpuset.cpus
	cgroupCpuset                       // cpuset fs or v1 noprefix: cpus
)

// cgroupResult is what the cgroup files restrict.
type cgroupResult struct {
	cpus, mems       cpuset.Set
	hasCPUs, hasMems bool
	quota            *Quota
}

// rel turns an absolute path inside the root into one relative to it.
func rel(abs string) string {
	return strings.TrimPrefix(path.Clean("/"+abs), "/")
}

// join joins a mount directory, a cgroup path and a file name into a path
// relative to the root.
func join(dir, cgroup, file string) string {
	return rel(path.Join(dir, cgroup, file))
}

func (d *discoverer) readCgroups() (cgroupResult, error) {
	var res cgroupResult
	mounts, err := d.mountTable()
	if err != nil {
		return res, err
	}
	lines, err := d.procCgroup()
	if err != nil {
		return res, err
	}
	if err := d.readCpuset(&res, mounts, lines); err != nil {
		return res, err
	}
	q, err := d.readQuota(mounts, lines)
	if err != nil {
		return res, err
	}
	res.quota = q
	return res, nil
}

// mountTable reads proc/self/mountinfo, else proc/mounts; nil when neither
// exists.
func (d *discoverer) mountTable() ([]mount, error) {
	for _, f := range []struct {
		rel   string
		parse func([]byte) ([]mount, string, error)
	}{{"proc/self/mountinfo", parseMountinfo}, {"proc/mounts", parseMounts}} {
		data, ok, err := d.r.read(f.rel)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		m, line, err := f.parse(data)
		if err != nil {
			return nil, &FileError{Path: f.rel, Text: clip(line), Err: err}
		}
		return m, nil
	}
	return nil, nil
}

// procCgroup reads proc/self/cgroup; nil when absent.
func (d *discoverer) procCgroup() ([]cgroupLine, error) {
	const p = "proc/self/cgroup"
	data, ok, err := d.r.read(p)
	if err != nil || !ok {
		return nil, err
	}
	lines, line, err := parseProcCgroup(data)
	if err != nil {
		return nil, &FileError{Path: p, Text: clip(line), Err: err}
	}
	return lines, nil
}

// cgroupPath returns the process's cgroup in the v2 hierarchy (controller
// "") or in the v1 hierarchy holding controller.
func cgroupPath(lines []cgroupLine, controller string) (string, bool) {
	for _, l := range lines {
		if controller == "" && l.ID == 0 && len(l.Controllers) == 0 {
			return l.Path, true
		}
		if controller != "" && slices.Contains(l.Controllers, controller) {
			return l.Path, true
		}
	}
	return "", false
}

// inMount makes a cgroup path relative to the mount's root; ok is false
// when the cgroup is outside the mounted subtree (a cgroup namespace that
// hides it), in which case its files cannot be read.
func inMount(m mount, cg string) (string, bool) {
	root := path.Clean(m.Root)
	if root == "/" {
		return cg, true
	}
	if cg == root {
		return "/", true
	}
	if rest, ok := strings.CutPrefix(cg, root+"/"); ok {
		return "/" + rest, true
	}
	return "", false
}

// cpusetHierarchy finds the mount of the cpuset controller.
func (d *discoverer) cpusetHierarchy(mounts []mount) (mount, cgroupKind, error) {
	for _, m := range mounts {
		switch m.FSType {
		case "cgroup2":
			p := join(m.Dir, "/", "cgroup.controllers")
			s, ok, err := d.r.text(p)
			if err != nil {
				return mount{}, 0, err
			}
			if ok && slices.Contains(strings.Fields(s), "cpuset") {
				return m, cgroupV2, nil
			}
		case "cpuset":
			return m, cgroupCpuset, nil
		case "cgroup":
			if m.hasOption("cpuset") {
				if m.hasOption("noprefix") {
					return m, cgroupCpuset, nil
				}
				return m, cgroupV1, nil
			}
		}
	}
	if mounts != nil {
		return mount{}, 0, nil
	}
	for _, std := range []struct {
		dir, probe string
		kind       cgroupKind
	}{
		{"/sys/fs/cgroup", "cpuset.cpus.effective", cgroupV2},
		{"/sys/fs/cgroup/cpuset", "cpuset.cpus", cgroupV1},
		{"/dev/cpuset", "cpus", cgroupCpuset},
	} {
		if _, ok, err := d.r.read(join(std.dir, "/", std.probe)); err != nil {
			return mount{}, 0, err
		} else if ok {
			return mount{Root: "/", Dir: std.dir}, std.kind, nil
		}
	}
	return mount{}, 0, nil
}

// readCpuset fills res.cpus and res.mems from the cpuset controller.
func (d *discoverer) readCpuset(res *cgroupResult, mounts []mount, lines []cgroupLine) error {
	m, kind, err := d.cpusetHierarchy(mounts)
	if err != nil || kind == 0 {
		return err
	}
	ctrl := "cpuset"
	if kind == cgroupV2 {
		ctrl = ""
	}
	cg, ok := cgroupPath(lines, ctrl)
	if !ok {
		s, found, err := d.r.text("proc/self/cpuset")
		if err != nil {
			return err
		}
		if !found || !strings.HasPrefix(s, "/") {
			d.debug("cpuset hierarchy found but the process's cgroup is unknown")
			return nil
		}
		cg = s
	}
	cg, ok = inMount(m, cg)
	if !ok {
		d.note("cgroup of the process is outside the cpuset mount %s; cpuset not applied", m.Dir)
		return nil
	}
	cpusFile, memsFile := "cpuset.cpus", "cpuset.mems"
	switch kind {
	case cgroupV2:
		cpusFile, memsFile = "cpuset.cpus.effective", "cpuset.mems.effective"
	case cgroupCpuset:
		cpusFile, memsFile = "cpus", "mems"
	}
	// The files hold cpulists whatever their name says.
	for _, f := range []struct {
		name string
		set  *cpuset.Set
		has  *bool
	}{{cpusFile, &res.cpus, &res.hasCPUs}, {memsFile, &res.mems, &res.hasMems}} {
		p := join(m.Dir, cg, f.name)
		s, ok, err := d.r.text(p)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		set, err := cpuset.Parse(s)
		if err != nil {
			return &FileError{Path: p, Text: clip(s), Err: err}
		}
		*f.set, *f.has = set, true
		d.debug("cgroup cpuset", zap.String("file", p), zap.Stringer("set", set))
	}
	return nil
}

// readQuota returns the tightest CPU bandwidth limit, or nil.
func (d *discoverer) readQuota(mounts []mount, lines []cgroupLine) (*Quota, error) {
	var best *Quota
	consider := func(q *Quota) {
		if best == nil || float64(q.QuotaMicros)/float64(q.PeriodMicros) <
			float64(best.QuotaMicros)/float64(best.PeriodMicros) {
			best = q
		}
	}
	for _, m := range mounts {
		var ctrl string
		switch {
		case m.FSType == "cgroup2":
		case m.FSType == "cgroup" && m.hasOption("cpu"):
			ctrl = "cpu"
		default:
			continue
		}
		cg, ok := cgroupPath(lines, ctrl)
		if !ok {
			continue
		}
		if cg, ok = inMount(m, cg); !ok {
			continue
		}
		for p := path.Clean(cg); ; p = path.Dir(p) {
			q, err := d.quotaAt(m.Dir, p, ctrl == "")
			if err != nil {
				return nil, err
			}
			if q != nil {
				consider(q)
			}
			if p == "/" {
				break
			}
		}
	}
	return best, nil
}

// quotaAt reads the limit of one cgroup directory; nil when unlimited.
func (d *discoverer) quotaAt(dir, cg string, v2 bool) (*Quota, error) {
	if v2 {
		p := join(dir, cg, "cpu.max")
		s, ok, err := d.r.text(p)
		if err != nil || !ok {
			return nil, err
		}
		quota, period, limited, err := parseCPUMax(s)
		if err != nil {
			return nil, &FileError{Path: p, Text: clip(s), Err: err}
		}
		if !limited {
			return nil, nil
		}
		return &Quota{QuotaMicros: quota, PeriodMicros: period, File: p}, nil
	}
	qp, pp := join(dir, cg, "cpu.cfs_quota_us"), join(dir, cg, "cpu.cfs_period_us")
	qs, ok, err := d.r.text(qp)
	if err != nil || !ok {
		return nil, err
	}
	quota, err := strconv.ParseInt(qs, 10, 64)
	if err != nil || quota < -1 || quota == 0 {
		return nil, &FileError{Path: qp, Text: clip(qs), Err: fmt.Errorf("quota is not -1 or a positive number: %w", ErrSyntax)}
	}
	if quota == -1 {
		return nil, nil
	}
	ps, ok, err := d.r.text(pp)
	if err != nil || !ok {
		return nil, err
	}
	period, err := strconv.ParseInt(ps, 10, 64)
	if err != nil || period <= 0 {
		return nil, &FileError{Path: pp, Text: clip(ps), Err: fmt.Errorf("period is not a positive number: %w", ErrSyntax)}
	}
	return &Quota{QuotaMicros: quota, PeriodMicros: period, File: qp}, nil
}
