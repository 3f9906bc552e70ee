package affinity

import (
	"os/exec"
	"runtime"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// StartPinned starts cmd (like cmd.Start) with the child already confined to
// the CPUs in set: it never runs an instruction outside them, and every
// process it starts inherits the mask unless it changes it itself.
//
// How: Linux copies the affinity mask and the memory policy of the thread
// that calls clone into the child (kernel/fork.c dup_task_struct), and Go's
// os.StartProcess clones the child from the thread of the goroutine that
// calls it (syscall.forkAndExecInChild1, a raw vfork-style clone). So
// StartPinned runs cmd.Start on a new goroutine that locks its OS thread and
// pins it to set first (LockAndPin), then restores the thread's mask and
// unlocks it, so the thread goes back to the runtime's pool as it was. If
// the old mask cannot be restored, the goroutine ends still locked and the
// runtime ends the thread, so a pinned mask never leaks to other
// goroutines.
//
// Rejected: ending the thread after every start, which costs a thread
// creation per process (BenchmarkStartPinned measures a start).
//
// Rejected: pinning the caller's own thread and restoring its mask after
// Start. It would narrow, for a moment, a thread the caller may have pinned
// for its own reasons, and a failed restore would leave it narrowed. Also
// rejected: SetProcessAffinity after Start, which leaves a window in which
// the child runs, and may fork, unconfined.
//
// Per-thread state the caller set on its own thread (a memory policy, a
// namespace) is therefore not passed to the child; use StartPlaced to give
// the child a memory policy.
func StartPinned(cmd *exec.Cmd, set cpuset.Set) error {
	return StartPlaced(cmd, Placement{CPUs: set})
}

// StartPlaced is StartPinned with a memory policy as well: when p.Mem is not
// nil the child starts with that policy (set_mempolicy on the forking
// thread; like the mask, children inherit it), the way
// `numactl --physcpubind=... --membind=...` starts a program.
func StartPlaced(cmd *exec.Cmd, p Placement) error {
	if p.CPUs.IsEmpty() {
		return &Error{Op: "sched_setaffinity", Unit: "CPUs", Err: ErrEmptySet}
	}
	if p.Mem != nil && p.Mem.Nodes.IsEmpty() && p.Mem.Mode.needsNodes() {
		return &Error{Op: "set_mempolicy " + p.Mem.Mode.String(), Unit: "nodes", Err: ErrEmptySet}
	}
	errc := make(chan error, 1)
	if p.Mem == nil {
		go func() {
			unlock, err := LockAndPin(p.CPUs)
			if err != nil {
				errc <- err
				return
			}
			err = cmd.Start()
			unlock() // leaves the thread locked, to die, if the restore fails
			errc <- err
		}()
		return <-errc
	}
	go func() {
		// Never unlocked: the thread dies with this goroutine, so its
		// memory policy is not handed on (see StartPinned).
		runtime.LockOSThread()
		if err := PinThread(p.CPUs); err != nil {
			errc <- err
			return
		}
		if p.Mem != nil {
			if err := SetMemPolicy(p.Mem.Mode, p.Mem.Nodes); err != nil {
				errc <- err
				return
			}
		}
		errc <- cmd.Start()
	}()
	return <-errc
}
