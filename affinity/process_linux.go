package affinity

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// SetProcessAffinity restricts the running process pid, and every thread it
// has, to the CPUs in set. The threads are listed from /proc/PID/task; a
// thread the process creates while the call runs may be missed, and one
// that exits meanwhile is skipped. Children the process forks afterwards
// inherit the mask, children it forked before do not. To confine a child
// from its start, with no window at all, use StartPinned.
//
// pid must be positive: 0, which the system call takes as the caller, is
// refused (EINVAL) because it would pin only the calling thread; use
// PinThread for that. It fails with an *Error wrapping ESRCH when there is no such process and
// EPERM when the caller may not change it.
func SetProcessAffinity(pid int, set cpuset.Set) error {
	if pid <= 0 {
		return &Error{Op: "sched_setaffinity", Unit: "CPUs", Set: set.String(), Err: badPid(pid)}
	}
	// The thread group leader first: its tid is pid, so this also tells
	// whether the process exists.
	if err := setAffinity(pid, set); err != nil {
		return err
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		// No /proc, or the process just exited: the leader was done.
		return nil
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil || tid == pid {
			continue
		}
		if err := setAffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
			return err
		}
	}
	return nil
}

// ProcessAffinity returns the CPUs that process (or thread) pid may run on:
// the mask of the thread whose id is pid, which for a process is its main
// thread. pid must be positive.
func ProcessAffinity(pid int) (cpuset.Set, error) {
	if pid <= 0 {
		return cpuset.Set{}, &Error{Op: "sched_getaffinity", Err: badPid(pid)}
	}
	return getAffinity(pid)
}

// badPid is the cause for a pid that names no process.
func badPid(pid int) error {
	return fmt.Errorf("pid %d is not a process id: %w", pid, unix.EINVAL)
}
