//go:build linux

package supervise

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/topology"
)

// The tasks' memory cgroup (doc.go, "The tasks' memory"): one memory
// cgroup that holds the run's tasks and nothing else, limited to
// Options.TaskMemoryLimit.

// taskMemory is the memory cgroup of a run's tasks.
type taskMemory struct {
	group topology.MemoryCgroup // Dir absolute
	// procs is the v1 group's cgroup.procs, into which a task's main
	// child is moved right after its fork when its forking thread could
	// not enter the group; nil in v2, where the run's cgroup is the
	// memory cgroup and tasks are cloned into it.
	procs *os.File
	// threads is the v1 group's tasks file, into which a thread that
	// forks tasks moves itself (a child is born in its forking thread's
	// cgroup), and ownThreads that of this process's own group, to which
	// it moves back; nil in v2.
	threads, ownThreads *os.File
	// leaf is the v2 cgroup this process moved to, below its own, so that
	// its own could enable the memory controller for the run's cgroup; ""
	// when it did not move.
	leaf string
	// limitFile sets the group's limit: the v1 group's
	// memory.limit_in_bytes, the v2 group's memory.max.
	limitFile string
	warned    atomic.Bool // a failed move was logged
}

// makeTaskMemory makes the run's tasks' memory cgroup, limited to limit
// bytes: in the hierarchy that holds the memory controller, a cgroup
// numasteal-RUNID below this process's own v1 memory cgroup, or in v2 the
// run's cgroup run itself (nil when the run has none), with the memory
// controller enabled in its parent. The error says why not; nothing is
// left behind then.
func makeTaskMemory(runID string, limit int64, run *cgroupRun) (*taskMemory, error) {
	groups, err := topology.MemoryCgroups("/", 0)
	if err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		return nil, errors.New("this process is in no memory cgroup hierarchy")
	}
	if own := groups[0]; !own.V2 {
		return makeTaskMemoryV1(own.Dir, runID, limit)
	}
	if run == nil {
		return nil, errors.New("cgroup v2 holds the memory controller, and the run has no cgroup")
	}
	// v2 gives a cgroup's children a controller only when the cgroup
	// holds no process itself (its root excepted): the run cgroup's
	// parent must be a delegated subtree without members (CgroupParent),
	// or this process's own cgroup once this process, its only member,
	// has moved to a leaf below it.
	m := &taskMemory{group: topology.MemoryCgroup{Dir: run.dir, V2: true}, limitFile: filepath.Join(run.dir, "memory.max")}
	parent := filepath.Dir(run.dir)
	if err := enableMemory(parent); err != nil {
		if !errors.Is(err, unix.EBUSY) {
			return nil, fmt.Errorf("enabling the memory controller below %s: %w", parent, err)
		}
		if m.leaf, err = leaveForLeaf(parent, run.dir+"-self"); err != nil {
			return nil, fmt.Errorf("enabling the memory controller below %s: %w", parent, err)
		}
		if err := enableMemory(parent); err != nil {
			m.restore()
			return nil, fmt.Errorf("enabling the memory controller below %s: %w", parent, err)
		}
	}
	if err := m.setLimit(limit); err != nil {
		m.restore()
		return nil, err
	}
	return m, nil
}

// leaveForLeaf moves this process from its v2 cgroup own, where it must
// be the only process, into a new cgroup leaf below it, so that own may
// enable controllers for its children; restore undoes it. The error
// says why not; nothing is changed then.
func leaveForLeaf(own, leaf string) (string, error) {
	mount, path, err := ownCgroup()
	if err != nil {
		return "", err
	}
	if own != filepath.Join(mount, path) {
		return "", fmt.Errorf("the cgroup has processes of its own (v2 then enables no controller below it), and it is not this process's")
	}
	if pids := cgroupPids(own); len(pids) != 1 || pids[0] != os.Getpid() {
		return "", fmt.Errorf("the cgroup has processes of its own (v2 then enables no controller below it), and not only this one: %v", pids)
	}
	if err := os.Mkdir(leaf, 0o755); err != nil {
		return "", fmt.Errorf("making a leaf cgroup for this process: %w", err)
	}
	if err := writeInt(filepath.Join(leaf, "cgroup.procs"), int64(os.Getpid())); err != nil {
		_ = os.Remove(leaf)
		return "", fmt.Errorf("moving this process to a leaf cgroup: %w", err)
	}
	return leaf, nil
}

// restore undoes leaveForLeaf, once nothing is left below the parent but
// the leaf: the memory controller is disabled in the parent again, this
// process moves back and the leaf is removed. A no-op without a leaf.
func (m *taskMemory) restore() error {
	if m.leaf == "" {
		return nil
	}
	err := returnFromLeaf(m.leaf, os.Getpid())
	m.leaf = ""
	return err
}

// returnFromLeaf disables the memory controller in leaf's parent, moves
// pid there from leaf and removes leaf (after the leaf's other members,
// a watchdog that is exiting, have gone: up to 10 s).
func returnFromLeaf(leaf string, pid int) error {
	parent := filepath.Dir(leaf)
	var errs []error
	if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("-memory"), 0); err != nil {
		errs = append(errs, fmt.Errorf("supervise: disabling the memory controller below %s: %w", parent, err))
	}
	if err := writeInt(filepath.Join(parent, "cgroup.procs"), int64(pid)); err != nil {
		errs = append(errs, fmt.Errorf("supervise: moving back to %s: %w", parent, err))
	}
	if err := removeCgroupTree(leaf, 10*time.Second); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// makeTaskMemoryV1 makes the v1 memory cgroup numasteal-RUNID below own.
func makeTaskMemoryV1(own, runID string, limit int64) (*taskMemory, error) {
	dir := filepath.Join(own, "numasteal-"+runID)
	err := os.Mkdir(dir, 0o755)
	if err != nil {
		return nil, fmt.Errorf("creating the tasks' memory cgroup: %w", err)
	}
	fail := func(err error) (*taskMemory, error) {
		_ = os.Remove(dir)
		return nil, err
	}
	m := &taskMemory{group: topology.MemoryCgroup{Dir: dir}, limitFile: filepath.Join(dir, "memory.limit_in_bytes")}
	if err := m.setLimit(limit); err != nil {
		return fail(err)
	}
	for _, f := range []struct {
		to   **os.File
		path string
	}{
		{&m.procs, filepath.Join(dir, "cgroup.procs")},
		{&m.threads, filepath.Join(dir, "tasks")},
		{&m.ownThreads, filepath.Join(own, "tasks")},
	} {
		if *f.to, err = os.OpenFile(f.path, os.O_WRONLY, 0); err != nil {
			m.close()
			return fail(fmt.Errorf("opening the tasks' memory cgroup: %w", err))
		}
	}
	if err := mayMoveOut(own); err != nil {
		m.close()
		return fail(err)
	}
	return m, nil
}

// threadsMove says that a thread that forks tasks enters the group (v1).
func (m *taskMemory) threadsMove() bool { return m.threads != nil }

// enterThread moves the calling thread, locked and not the main thread,
// into the v1 group: the children it forks are born there.
func (m *taskMemory) enterThread() error { return writeID(m.threads, unix.Gettid()) }

// leaveThread moves the calling thread back to this process's own group.
func (m *taskMemory) leaveThread() error { return writeID(m.ownThreads, unix.Gettid()) }

// writeID writes a pid or tid to an open cgroup file (cgroup.procs,
// tasks): one write, which moves it.
func writeID(f *os.File, id int) error {
	var buf [20]byte
	_, err := f.Write(strconv.AppendInt(buf[:0], int64(id), 10))
	return err
}

// close closes the v1 group's files.
func (m *taskMemory) close() {
	for _, f := range []*os.File{m.procs, m.threads, m.ownThreads} {
		if f != nil {
			f.Close()
		}
	}
}

// enter moves the just-forked main child pid, forked outside, into the
// v1 group; in v2 it was cloned there. A child that has exited already is
// not an error.
func (m *taskMemory) enter(pid int) error {
	if m.procs == nil {
		return nil
	}
	err := writeID(m.procs, pid)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}

// remove closes and removes the v1 group, once its tasks have ended; the
// v2 group is the run's cgroup, removed with it.
func (m *taskMemory) remove() error {
	if m.procs == nil {
		return nil
	}
	m.close()
	return removeCgroupTree(m.group.Dir, 10*time.Second)
}

// setLimit sets the group's limit to limit bytes, or lifts it when limit
// is 0 or less.
func (m *taskMemory) setLimit(limit int64) error {
	var err error
	switch {
	case limit > 0:
		err = writeInt(m.limitFile, limit)
	case m.group.V2:
		err = os.WriteFile(m.limitFile, []byte("max"), 0)
	default:
		err = writeInt(m.limitFile, -1)
	}
	if err != nil {
		return fmt.Errorf("setting the tasks' memory limit: %w", err)
	}
	return nil
}

// writeInt writes n to a cgroup file (a pid to cgroup.procs moves it).
func writeInt(file string, n int64) error {
	return os.WriteFile(file, strconv.AppendInt(nil, n, 10), 0)
}

// enableMemory turns the v2 memory controller on for dir's children.
func enableMemory(dir string) error {
	file := filepath.Join(dir, "cgroup.subtree_control")
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if slices.Contains(strings.Fields(string(b)), "memory") {
		return nil
	}
	if err := os.WriteFile(file, []byte("+memory"), 0); err != nil {
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("%w (the cgroup has processes of its own; v2 then enables no controller below it)", err)
		}
		return err
	}
	return nil
}
