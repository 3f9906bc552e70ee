package memory

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/numasteal/numasteal/internal/kernfile"
	"github.com/numasteal/numasteal/topology"
)

// Source reads the memory state of the machine and of one process's
// memory cgroups (its own and every ancestor, in the v1 memory hierarchy
// or in v2) below a root: "/" for the live machine, a fixture tree in
// tests. The cgroups are found once, by Open; their limits, usage and
// counters are read again by every Sample, since an administrator may
// change a limit while a build runs. A Source is safe for concurrent use.
type Source struct {
	root   string
	groups []topology.MemoryCgroup
	// limited is every cgroup whose limit counts: groups, and the tasks'
	// cgroup of WithTasks last.
	limited []topology.MemoryCgroup
	// tasks is WithTasks's cgroup, nil without; tasksInOwn says that the
	// own cgroup's OOM-kill count already holds its kills (a v2 cgroup
	// below the own, v2 own).
	tasks      *topology.MemoryCgroup
	tasksInOwn bool
	pressure   string // the PSI file, relative to root
}

// Open returns the Source of process pid (0: the calling process) below
// root. A machine with no memory controller gives a Source that sees
// /proc/meminfo alone.
func Open(root string, pid int) (*Source, error) {
	groups, err := topology.MemoryCgroups(root, pid)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	s := &Source{root: root, groups: groups, limited: groups, pressure: "proc/pressure/memory"}
	// The process's own v2 cgroup has its own PSI, which counts only its
	// tasks' stalls; the machine's counts everybody's. Prefer the group's:
	// the memory cgroup's where v2 has the controller (found through the
	// mount table, so a cgroup namespace's mount of a subtree is read
	// right), else the one below the root of the hierarchy.
	if len(groups) > 0 && groups[0].V2 {
		rel := path.Join(groups[0].Dir, "memory.pressure")
		if _, err := os.Stat(s.abs(rel)); err == nil {
			s.pressure = rel
		}
	} else if own, ok := ownV2(root, pid); ok {
		s.pressure = own
	}
	return s, nil
}

// ownV2 returns the memory.pressure file of the process's v2 cgroup when
// it is not the hierarchy's root; PSI per cgroup needs no controller.
func ownV2(root string, pid int) (string, bool) {
	proc := "self"
	if pid > 0 {
		proc = fmt.Sprint(pid)
	}
	b, err := os.ReadFile(filepath.Join(root, "proc", proc, "cgroup"))
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "0::")
		if !ok || rest == "/" || rest == "" {
			continue
		}
		for _, mnt := range []string{"sys/fs/cgroup", "sys/fs/cgroup/unified"} {
			rel := path.Join(mnt, rest, "memory.pressure")
			if _, err := os.Stat(filepath.Join(root, rel)); err == nil {
				return rel, true
			}
		}
	}
	return "", false
}

// Groups returns the process's memory cgroups the Source reads, own
// cgroup first.
func (s *Source) Groups() []topology.MemoryCgroup { return s.groups }

// WithTasks returns a Source that also reads g, a memory cgroup that
// holds the process's tasks alone (supervise's Mechanisms.TaskMemory, its
// Dir below the Source's root): g's limit is one more limit, and the
// tightest wins; its OOM kills count with the own cgroup's.
func (s *Source) WithTasks(g topology.MemoryCgroup) *Source {
	c := *s
	c.tasks = &g
	c.limited = append(slices.Clip(s.groups), g)
	c.tasksInOwn = g.V2 && len(s.groups) > 0 && s.groups[0].V2 &&
		strings.HasPrefix(g.Dir, strings.TrimSuffix(s.groups[0].Dir, "/")+"/")
	return &c
}

// TasksLimit returns the limit that a memory cgroup holding the owner's
// tasks alone should have (supervise's Options.TaskMemoryLimit): the
// tightest limit of the owner's cgroups (Sample.Limit) less a margin for
// the owner: what it holds now (self, its resident memory) and as much
// again, at least 32 MiB, for its growth and its helpers (a watchdog).
// The tasks' cgroup keeps them from taking that margin, so an OOM kill
// when they outgrow it chooses among them, never the owner. It returns 0,
// no such cgroup, when no limit is set or the margin would take more than
// a quarter of the limit: in so small a group the tasks' room counts for
// more, and the owner keeps only the OOM score's protection.
func TasksLimit(limit, self int64) int64 {
	if limit <= 0 {
		return 0
	}
	self = max(self, 0)
	margin := self + max(self, 32<<20)
	if margin > limit/4 {
		return 0
	}
	return limit - margin
}

// TasksLimit is the function TasksLimit of a sample's OwnLimit taken now
// and of this process's resident memory (/proc/self/statm below the
// root).
func (s *Source) TasksLimit() (int64, error) {
	smp, err := s.Sample()
	if err != nil {
		return 0, err
	}
	b, err := s.read("proc/self/statm")
	if err != nil {
		return 0, err
	}
	rss, ok := statmResident(b)
	if !ok {
		return 0, &FileError{Path: s.abs("proc/self/statm"), Text: string(b), Err: ErrSyntax}
	}
	return TasksLimit(smp.OwnLimit, rss), nil
}

// Sample is the memory state at one moment.
type Sample struct {
	// MemAvailable is the machine's /proc/meminfo MemAvailable (MemFree
	// on kernels before 3.14).
	MemAvailable int64
	// Limit is the tightest limit of the process's memory cgroups, own
	// or ancestor, and of its tasks' (WithTasks): cgroup v2 memory.max
	// or memory.high, v1 memory.limit_in_bytes; 0 when none is set.
	// LimitFile names the file.
	Limit     int64
	LimitFile string
	// OwnLimit is the tightest limit of the process's own memory cgroups
	// alone, leaving out its tasks' (WithTasks), whose limit follows from
	// it (TasksLimit); 0 when none is set.
	OwnLimit int64
	// Available is what may still be allocated before something gives:
	// the smallest of MemAvailable and, for every limited cgroup, its
	// limit less its working set (usage less inactive file pages, which
	// the kernel reclaims first). Never negative.
	Available int64
	// At is when the sample was taken.
	At time.Time
	// Pressure is the memory PSI of the process's v2 cgroup, else of the
	// machine; HasPressure is false on kernels without PSI.
	Pressure    Pressure
	HasPressure bool
	// OOMKills counts OOM kills so far: those of processes in the
	// process's own memory cgroup, and in v2 below it (v2 memory.events,
	// v1 memory.oom_control, which count a member's kill whichever limit,
	// the group's or the machine's, ran out) when that cgroup is not its
	// hierarchy's root, else the machine's (/proc/vmstat oom_kill); and
	// those in the tasks' cgroup (WithTasks). Kills in other cgroups
	// (another build's) do not count. Only its changes mean anything.
	OOMKills int64
}

// Sample reads the current state. An unreadable optional file (no PSI,
// no vmstat counter) leaves its field zero; a malformed one is an error
// naming the file.
func (s *Source) Sample() (Sample, error) {
	out := Sample{At: time.Now()}
	b, err := s.read("proc/meminfo")
	if err != nil {
		return out, err
	}
	v, ok, err := parseKeyed(b, "MemAvailable:", 0)
	if err == nil && !ok {
		v, _, err = parseKeyed(b, "MemFree:", 0)
	}
	if err != nil {
		return out, &FileError{Path: s.abs("proc/meminfo"), Err: err}
	}
	out.MemAvailable, out.Available = v, v
	for i, g := range s.limited {
		lim, file, ws, err := s.groupState(g)
		if err != nil {
			return out, err
		}
		if lim == 0 {
			continue
		}
		if out.Limit == 0 || lim < out.Limit {
			out.Limit, out.LimitFile = lim, file
		}
		if own := i < len(s.groups); own && (out.OwnLimit == 0 || lim < out.OwnLimit) {
			out.OwnLimit = lim
		}
		out.Available = min(out.Available, max(lim-ws, 0))
	}
	if b, err := s.read(s.pressure); err == nil {
		p, err := parsePressure(b)
		if err != nil {
			return out, &FileError{Path: s.abs(s.pressure), Err: err}
		}
		out.Pressure, out.HasPressure = p, true
	}
	if out.OOMKills, err = s.OOMKills(); err != nil {
		return out, err
	}
	return out, nil
}

// OOMKills reads the OOM-kill count alone (Sample.OOMKills), a cheaper
// read than a Sample.
func (s *Source) OOMKills() (int64, error) {
	var n int64
	ok := len(s.groups) >= 2 // the hierarchy's root counts nothing: the kernel counts up to its children
	if ok {
		var err error
		if n, ok, err = s.cgroupOOMKills(s.groups[0]); err != nil {
			return 0, err
		}
	}
	if !ok {
		// The machine's count, which holds every kill, the tasks' too.
		b, err := s.read("proc/vmstat")
		if err != nil {
			return 0, nil // no counter on this kernel
		}
		if n, _, err = parseKeyed(b, "oom_kill", 0); err != nil {
			return 0, &FileError{Path: s.abs("proc/vmstat"), Err: err}
		}
		return n, nil
	}
	if s.tasks == nil || s.tasksInOwn {
		return n, nil
	}
	// v1 counts a kill in the victim's cgroup alone, so the own cgroup's
	// count misses the tasks'.
	tasks, _, err := s.cgroupOOMKills(*s.tasks)
	return n + tasks, err
}

// cgroupOOMKills reads the OOM-kill count of cgroup g (v2 memory.events,
// v1 memory.oom_control); ok is false when it has none, or is gone (a
// tasks' cgroup removed as its tasks ended).
func (s *Source) cgroupOOMKills(g topology.MemoryCgroup) (n int64, ok bool, err error) {
	rel := path.Join(g.Dir, "memory.oom_control")
	if g.V2 {
		rel = path.Join(g.Dir, "memory.events")
	}
	b, err := s.read(rel)
	if err != nil {
		return 0, false, nil
	}
	n, ok, err = parseKeyed(b, "oom_kill", 0)
	if err != nil {
		return 0, false, &FileError{Path: s.abs(rel), Err: err}
	}
	return n, ok, nil
}

// groupState reads one cgroup's limit (0: none), the file that sets it,
// and its working set.
func (s *Source) groupState(g topology.MemoryCgroup) (limit int64, file string, ws int64, err error) {
	files := []string{"memory.limit_in_bytes"}
	usage, inactive := "memory.usage_in_bytes", "total_inactive_file"
	if g.V2 {
		files = []string{"memory.max", "memory.high"}
		usage, inactive = "memory.current", "inactive_file"
	}
	for _, f := range files {
		rel := path.Join(g.Dir, f)
		b, err := s.read(rel)
		if errors.Is(err, os.ErrNotExist) {
			continue // the root cgroup has no memory.max
		}
		if err != nil {
			return 0, "", 0, err
		}
		n, ok, err := parseLimit(b)
		if err != nil {
			return 0, "", 0, &FileError{Path: s.abs(rel), Err: err}
		}
		if ok && (limit == 0 || n < limit) {
			limit, file = n, s.abs(rel)
		}
	}
	if limit == 0 {
		return 0, "", 0, nil
	}
	rel := path.Join(g.Dir, usage)
	b, err := s.read(rel)
	if err != nil {
		return 0, "", 0, err
	}
	used, ok, err := parseLimit(b)
	if err != nil || !ok {
		return 0, "", 0, &FileError{Path: s.abs(rel), Text: string(b), Err: fmt.Errorf("usage is not a byte count: %w", ErrSyntax)}
	}
	rel = path.Join(g.Dir, "memory.stat")
	if b, err := s.read(rel); err == nil {
		n, _, err := parseKeyed(b, inactive, 0)
		if err != nil {
			return 0, "", 0, &FileError{Path: s.abs(rel), Err: err}
		}
		used = max(used-n, 0)
	}
	return limit, file, used, nil
}

func (s *Source) abs(rel string) string { return filepath.Join(s.root, rel) }

func (s *Source) read(rel string) ([]byte, error) { return kernfile.Read(s.abs(rel), nil) }

// Unlimited is the Room of a plan that no limit bounds.
const Unlimited = math.MaxInt64
