//go:build linux

package proc

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// Process-group plumbing for process tasks (Linux).

// waitExited blocks until process pid has exited, without reaping it
// (WNOWAIT): the zombie keeps its pid, and so its process group's id,
// reserved, so signalling the group afterwards cannot hit a stranger that
// was given the recycled id.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// signalGroup sends sig to every process of the group pgid; a group that is
// already gone is not an error.
func signalGroup(pgid int, sig syscall.Signal) {
	_ = unix.Kill(-pgid, sig)
}

// reapGroup reaps every child of this process left in group pgid: with
// Subreaper set, the orphaned grandchildren of a task's command are
// reparented to us when the command exits, and die from the group's
// SIGKILL; without it there are none (they go to init). It returns once no
// child of ours is left in the group.
func reapGroup(pgid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PGID, pgid, &info, unix.WEXITED, nil)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return // ECHILD: none left
		}
	}
}

// setSubreaper makes the calling process a child subreaper
// (PR_SET_CHILD_SUBREAPER): orphaned descendants are reparented to it
// instead of to init. The attribute is per process and stays set.
func setSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// processAttr is what every process task starts with: a process group of
// its own, so cancellation can kill the command and everything it started.
func processAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
