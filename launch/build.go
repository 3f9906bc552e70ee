package launch

import (
	"strconv"
	"strings"
	"sync"

	"github.com/numasteal/numasteal/internal/procstat"
)

// isBuildTool reports whether comm (a command name, as /proc/PID/stat
// shows it) is a program whose outermost instance names a build. A switch,
// not a map: a map literal is built at every launcher's start.
func isBuildTool(comm string) bool {
	switch comm {
	case "make", "gmake", "remake", "ninja", "samu", "meson", "cmake", "ctest", "scons", "bazel":
		return true
	}
	return false
}

// Builds names the builds launchers belong to ("Build identity" in the
// package documentation), for the daemon, which reads the process tree
// so that the launcher need not: the innermost ancestor registered with
// AddRoot, else the outermost ancestor of a launcher whose command is a
// build tool (make, ninja, ...), named "comm-PID-STARTTIME" (the start
// time keeps a reused pid from naming an old build); else the launcher's
// parent, named the same way. The answer
// for a parent is cached, keyed by its pid and start time, so the
// launchers of one make cost two reads of /proc/PID/stat each, not a walk
// of the tree; with the parent's pid from the launcher (OfParent), on the
// live /proc of Linux, a parent seen before costs a poll(2) of a pidfd
// kept while it lives, and no read. A Builds is safe for concurrent use;
// Close releases its pidfds.
type Builds struct {
	proc    string
	live    bool // proc is the system's /proc: pidfds name its processes
	mu      sync.Mutex
	cache   map[string]string // "PID-STARTTIME" of a parent: its build
	roots   map[string]string // "PID-STARTTIME" of a registered root: its build
	parents map[int]parentBuild
}

// parentBuild is the build of the launchers of a live parent, held with
// a pidfd of that parent: while the pidfd is not readable the process
// lives, so the pid is still its own.
type parentBuild struct {
	id    string
	pidfd int
}

// buildsCacheMax bounds Builds' cache, buildsParentsMax its pidfds; each
// is emptied when full.
const (
	buildsCacheMax   = 4096
	buildsParentsMax = 256
)

// NewBuilds returns a Builds reading the process tree under proc
// ("/proc").
func NewBuilds(proc string) *Builds {
	return &Builds{proc: proc, live: proc == "/proc", cache: make(map[string]string),
		roots: make(map[string]string), parents: make(map[int]parentBuild)}
}

// Close releases the pidfds b holds; b still answers, reading /proc.
func (b *Builds) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dropParentsLocked()
	return nil
}

func (b *Builds) dropParentsLocked() {
	for _, p := range b.parents {
		closePidfd(p.pidfd)
	}
	clear(b.parents)
}

// AddRoot makes process pid the root of a build named "name-PID-START":
// every launcher below it belongs to that build, the innermost root
// winning over any build tool above it (numasteal exec registers the
// make it becomes, with its own jobserver). It returns the build's name;
// ok is false when pid's stat cannot be read.
func (b *Builds) AddRoot(pid int, name string) (id string, ok bool) {
	st, err := readStat(b.proc, pid)
	if err != nil {
		return "", false
	}
	key := strconv.Itoa(pid) + "-" + st.start
	id = sanitizeID(name + "-" + key)
	b.mu.Lock()
	b.roots[key] = id
	clear(b.cache) // a cached answer may name a build above the new root
	b.dropParentsLocked()
	b.mu.Unlock()
	return id, true
}

// RemoveRoot forgets the root of build id, named by AddRoot.
func (b *Builds) RemoveRoot(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k, v := range b.roots {
		if v == id {
			delete(b.roots, k)
		}
	}
	clear(b.cache)
	b.dropParentsLocked()
}

// root returns the build of the registered root "PID-START", if any.
func (b *Builds) root(key string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id, ok := b.roots[key]
	return id, ok
}

// Of returns the build of the launcher process pid, "" when pid's stat
// cannot be read (it ended, or lives in another pid namespace).
func (b *Builds) Of(pid int) string {
	st, err := readStat(b.proc, pid)
	if err != nil || st.ppid <= 1 {
		return ""
	}
	parent, err := readStat(b.proc, st.ppid)
	if err != nil {
		return ""
	}
	return b.ofStat(st.ppid, parent)
}

// OfParent returns the build of a launcher whose parent is ppid, as the
// launcher says (getppid(2)): what Of returns, without reading the
// launcher's stat, and for a parent seen before while it lives, without
// reading anything (see Builds).
func (b *Builds) OfParent(ppid int) string {
	if ppid <= 1 {
		return ""
	}
	if b.live {
		b.mu.Lock()
		p, ok := b.parents[ppid]
		if ok && pidfdAlive(p.pidfd) {
			b.mu.Unlock()
			return p.id
		}
		if ok {
			closePidfd(p.pidfd)
			delete(b.parents, ppid)
		}
		b.mu.Unlock()
	}
	fd := -1
	if b.live {
		fd = openPidfd(ppid) // before the stat: alive after it, the stat was of this process
	}
	parent, err := readStat(b.proc, ppid)
	if err != nil {
		closePidfd(fd)
		return ""
	}
	id := b.ofStat(ppid, parent)
	if fd < 0 {
		return id
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.parents[ppid]; ok || !pidfdAlive(fd) {
		closePidfd(fd)
		return id
	}
	if len(b.parents) >= buildsParentsMax {
		b.dropParentsLocked()
	}
	b.parents[ppid] = parentBuild{id: id, pidfd: fd}
	return id
}

// ofStat returns the build of the launchers of parent ppid, whose stat
// is st.
func (b *Builds) ofStat(ppid int, st procStat) string {
	key := strconv.Itoa(ppid) + "-" + st.start
	b.mu.Lock()
	id, ok := b.cache[key]
	b.mu.Unlock()
	if ok {
		return id
	}
	id = b.idFrom(ppid, st)
	b.mu.Lock()
	if len(b.cache) >= buildsCacheMax {
		clear(b.cache)
	}
	b.cache[key] = id
	b.mu.Unlock()
	return id
}

// idFrom walks up from ppid, whose stat is st.
func (b *Builds) idFrom(ppid int, st procStat) string {
	proc := b.proc
	best := ""
	first := ""
	for pid, depth := ppid, 0; pid > 1 && depth < 64; depth++ {
		if depth > 0 {
			var err error
			if st, err = readStat(proc, pid); err != nil {
				break
			}
		}
		key := strconv.Itoa(pid) + "-" + st.start
		if id, ok := b.root(key); ok {
			return id
		}
		id := st.comm + "-" + key
		if first == "" {
			first = id
		}
		if isBuildTool(st.comm) {
			best = id
		}
		pid = st.ppid
	}
	if best == "" {
		best = first
	}
	return sanitizeID(best)
}

// procStat is the part of /proc/PID/stat BuildID needs.
type procStat struct {
	comm  string
	ppid  int
	start string // field 22, clock ticks since boot
}

func readStat(proc string, pid int) (procStat, error) {
	var buf [512]byte
	b, err := procstat.Read(proc, pid, buf[:])
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// parseStat reads the command name, parent and start time of a
// /proc/PID/stat text.
func parseStat(b []byte) (procStat, error) {
	st, err := procstat.Parse(b)
	if err != nil {
		return procStat{}, ErrMalformed
	}
	ppid, err := st.Int(4)
	start := st.Field(22)
	if err != nil || start == nil {
		return procStat{}, ErrMalformed
	}
	return procStat{comm: string(st.Comm), ppid: ppid, start: string(start)}, nil
}

// sanitizeID keeps an id usable as a file name and a protocol value.
func sanitizeID(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) > 100 {
		b = b[:100]
	}
	return string(b)
}

// BuildProcess returns the build tool process that id, a build named by
// Builds ("comm-PID-STARTTIME", comm make, ninja...), stands for: its
// pid, while the process with that pid under proc ("/proc") still has
// that start time. ok is false for an id of another form
// ($NUMASTEAL_BUILD names a build as its user likes) and for a build
// named by the launcher's parent, which is no build tool (a script may
// leave its launchers behind on purpose); gone is true when the build's
// process has ended (the pid is free, or another process's).
func BuildProcess(proc, id string) (pid int, ok, gone bool) {
	i := strings.LastIndexByte(id, '-')
	if i <= 0 {
		return 0, false, false
	}
	start := id[i+1:]
	j := strings.LastIndexByte(id[:i], '-')
	pid, err := strconv.Atoi(id[j+1 : i])
	if err != nil || pid <= 1 || start == "" || j < 0 || !isBuildTool(id[:j]) {
		return 0, false, false
	}
	if _, err := strconv.ParseUint(start, 10, 64); err != nil {
		return 0, false, false
	}
	st, err := readStat(proc, pid)
	return pid, true, err != nil || st.start != start
}
