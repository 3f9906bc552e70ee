//go:build linux

package supervise

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/internal/freelist"
)

// The cgroup mechanism (doc.go, "Cgroups"): a directory per run under this
// process's own cgroup v2, a directory per task under that, each child
// cloned straight into its task's directory, and cgroup.kill and
// cgroup.freeze to end and stop them.

// ownCgroup returns the mount point of the cgroup2 file system (from
// /proc/self/mountinfo) and the path below it of this process's cgroup
// (the "0::" line of /proc/self/cgroup).
func ownCgroup() (mount, path string, err error) {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	mount = cgroup2Mount(mounts)
	if mount == "" {
		return "", "", errors.New("no cgroup2 file system is mounted")
	}
	cg, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "", err
	}
	path, ok := unifiedPath(cg)
	if !ok {
		return "", "", errors.New(`/proc/self/cgroup has no "0::" line (no cgroup v2 hierarchy)`)
	}
	return mount, path, nil
}

// cgroup2Mount returns the mount point of the first cgroup2 file system
// listed in the text of a mountinfo file, or "".
func cgroup2Mount(mountinfo []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// "36 35 0:30 / /sys/fs/cgroup/unified rw,... shared:9 - cgroup2 cgroup2 rw"
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) >= 5 && len(g) >= 1 && g[0] == "cgroup2" && f[3] == "/" {
			return unescapeMount(f[4])
		}
	}
	return ""
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unifiedPath returns the path of the "0::PATH" line of a /proc/PID/cgroup
// text.
func unifiedPath(cg []byte) (string, bool) {
	for _, line := range strings.Split(string(cg), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			return p, true
		}
	}
	return "", false
}

// cgroupRun is the run's cgroup directory and its idle task cgroups.
type cgroupRun struct {
	dir string // absolute
	rel string // below the cgroup2 mount, as /proc/PID/cgroup writes it
	// reuse says that an empty task cgroup may serve the next task: the
	// run's cgroup enables no controller below it (cgroup.subtree_control
	// is empty), so a task cgroup holds no state that outlives its
	// processes (the page cache a task touched stays charged to a memory
	// controller's cgroup, and would count for the next task).
	reuse bool

	idle freelist.List[*taskCgroup] // empty, thawed, ready for a task
	made atomic.Int64               // task cgroups created, their names 1, 2, ...
}

// taskCgroup is one task cgroup, held open while the run lasts.
type taskCgroup struct {
	dir    string // absolute
	rel    string // below the cgroup2 mount
	fd     int    // the directory, for CgroupFD
	events int    // cgroup.events, read with pread
	// killed says that cgroup.kill was written: such a cgroup is not
	// reused, since a kernel may kill what is later cloned into it (seen
	// on Linux 6.18 with CLONE_INTO_CGROUP: a child cloned after the
	// cgroup's kill gets SIGKILL).
	killed bool
}

// kill kills every process in the cgroup and below (cgroup.kill).
func (tc *taskCgroup) kill() error {
	tc.killed = true
	return cgroupKill(tc.dir)
}

// makeRunCgroup creates the run's cgroup, named numasteal-RUNID, under
// parent ("" for this process's own cgroup), and checks that it can serve:
// cgroup.kill (Linux 5.14, which also implies cloning into a cgroup, 5.7)
// and cgroup.freeze exist, and this process may move processes between
// its own cgroup and the new one (probed by writing its own pid to its own
// cgroup.procs, which moves nothing but is checked like a move). The
// error says why not; nothing is left behind then.
func makeRunCgroup(parent, runID string) (*cgroupRun, error) {
	mount, own, err := ownCgroup()
	if err != nil {
		return nil, err
	}
	ownDir := filepath.Join(mount, own)
	if parent == "" {
		parent = ownDir
	}
	rel, err := filepath.Rel(mount, parent)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, fmt.Errorf("%s is not below the cgroup2 mount %s", parent, mount)
	}
	dir := filepath.Join(parent, "numasteal-"+runID)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the run cgroup: %w", err)
	}
	fail := func(err error) (*cgroupRun, error) {
		_ = os.Remove(dir)
		return nil, err
	}
	for _, f := range []string{"cgroup.kill", "cgroup.freeze"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return fail(fmt.Errorf("the cgroup has no %s (Linux < 5.14?): %w", f, err))
		}
	}
	if err := mayMoveOut(ownDir); err != nil {
		return fail(err)
	}
	// A fresh cgroup enables no controller below it unless something
	// (a parent's configuration, a test) wrote its subtree_control.
	sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	reuse := err == nil && len(bytes.TrimSpace(sub)) == 0
	return &cgroupRun{dir: dir, rel: filepath.Join("/", rel, "numasteal-"+runID), reuse: reuse}, nil
}

// get returns an idle task cgroup, or a new one.
func (c *cgroupRun) get() (*taskCgroup, error) {
	if tc, ok := c.idle.Pop(); ok {
		return tc, nil
	}
	name := strconv.FormatInt(c.made.Add(1), 10)
	dir := filepath.Join(c.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("supervise: creating task cgroup: %w", err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("supervise: opening task cgroup: %w", &os.PathError{Op: "open", Path: dir, Err: err})
	}
	ev, err := unix.Openat(fd, "cgroup.events", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Close(fd)
		_ = os.Remove(dir)
		return nil, fmt.Errorf("supervise: opening task cgroup: %w", &os.PathError{Op: "open", Path: dir + "/cgroup.events", Err: err})
	}
	return &taskCgroup{dir: dir, rel: c.rel + "/" + name, fd: fd, events: ev}, nil
}

// put takes back a task cgroup whose task has ended: kept for the next
// task when it is empty and thawed and the run reuses cgroups, else
// closed and removed (waiting up to limit for it to empty).
func (c *cgroupRun) put(tc *taskCgroup, limit time.Duration) error {
	if c.reuse && !tc.killed {
		if populated, frozen, ok := tc.state(); ok && !populated && !frozen {
			c.idle.Push(tc)
			return nil
		}
	}
	tc.close()
	return removeCgroupTree(tc.dir, limit)
}

// closeIdle closes the idle task cgroups; removing the run's directory
// tree removes them.
func (c *cgroupRun) closeIdle() { c.idle.Drain((*taskCgroup).close) }

func (tc *taskCgroup) close() {
	_ = unix.Close(tc.events)
	_ = unix.Close(tc.fd)
}

// state reads cgroup.events: whether a live process is in the cgroup or
// below, and whether it is frozen; ok is false when it cannot be read.
func (tc *taskCgroup) state() (populated, frozen, ok bool) {
	var buf [128]byte
	n, err := unix.Pread(tc.events, buf[:], 0)
	if err != nil {
		return false, false, false
	}
	b := buf[:n]
	return bytes.Contains(b, []byte("populated 1")), bytes.Contains(b, []byte("frozen 1")), true
}

// populated reports whether a live process is in the cgroup or below; a
// cgroup.events that cannot be read says it is not (as cgroupPopulated).
func (tc *taskCgroup) populated() bool {
	p, _, _ := tc.state()
	return p
}

// cgroupKill kills every process in dir and below (cgroup.kill).
func cgroupKill(dir string) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
}

// cgroupFreeze freezes (true) or thaws (false) dir and everything below.
func cgroupFreeze(dir string, freeze bool) error {
	v := "0"
	if freeze {
		v = "1"
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.freeze"), []byte(v), 0)
}

// mayMoveOut checks that this process may move processes out of its own
// cgroup own (to one below it): it writes its own pid to own's
// cgroup.procs, which moves nothing and is checked like a move.
func mayMoveOut(own string) error {
	if err := writeInt(filepath.Join(own, "cgroup.procs"), int64(os.Getpid())); err != nil {
		return fmt.Errorf("may not move processes out of %s: %w", own, err)
	}
	return nil
}

// cgroupPids returns the processes in dir itself (cgroup.procs).
func cgroupPids(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// cgroupPopulated reports whether a live process is in dir or below
// (cgroup.events "populated 1"); a directory that cannot be read is not.
func cgroupPopulated(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	return err == nil && bytes.Contains(b, []byte("populated 1"))
}

// inCgroup reports whether process pid is in the cgroup whose path below
// the mount is rel ("/numasteal-r/3").
func inCgroup(pid int, rel string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return false
	}
	p, ok := unifiedPath(b)
	return ok && (p == rel || strings.HasPrefix(p, rel+"/"))
}

// removeCgroupTree removes dir and the cgroups below it, deepest first,
// waiting (up to limit) for each to empty: rmdir fails with EBUSY while a
// process, even a dying one, is inside.
func removeCgroupTree(dir string, limit time.Duration) error {
	entries, _ := os.ReadDir(dir)
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			errs = append(errs, removeCgroupTree(filepath.Join(dir, e.Name()), limit))
		}
	}
	deadline := time.Now().Add(limit)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			break
		}
		err = &os.PathError{Op: "rmdir", Path: dir, Err: err}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("supervise: removing cgroup: %w", err))
			break
		}
		time.Sleep(wait)
	}
	return errors.Join(errs...)
}
