//go:build linux

package supervise

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The reaper (doc.go, "The reaper"): with PR_SET_CHILD_SUBREAPER set, an
// orphaned descendant of a task becomes a child of this process, and when
// it exits it is a zombie here until waited for. waitpid(-1) would reap
// them, but would also take the exit status of a task's main child from
// the exec.Cmd.Wait waiting for it, so a pass lists this process's
// children and waits, WNOHANG, only for those no exec.Cmd owns.

// reapInterval is how often the reaper makes a pass: how long an orphan
// may stay a zombie here at most.
const reapInterval = 50 * time.Millisecond

// reapLoop makes a pass every reapInterval until quit. It does not wait
// for SIGCHLD: each main child's exit would then wake Go's signal
// goroutine and this one, two wake-ups a task for a pass its monitor
// makes anyway; orphans, which only a pass reaps, are rare.
func (s *Supervisor) reapLoop() {
	defer close(s.reaperDone)
	tick := time.NewTicker(reapInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			s.reapPass()
		case <-s.quit:
			return
		}
	}
}

// reapPass reaps every exited child of this process that is not a direct
// child of a Supervisor's exec.Cmd, and returns how many it reaped. It
// holds forkMu, so a child just forked is either registered or not yet
// visible.
//
// The common pass costs one system call: waitid(P_ALL, WNOHANG|WNOWAIT)
// peeks at an exited child without reaping it; none means nothing to do,
// an unowned one is reaped by pid and the peek repeated. A peek that
// shows an owned zombie (a main child whose monitor has not called
// cmd.Wait yet), which would hide the others, ends the pass: that
// monitor makes a pass once it has reaped its child, so whatever was
// hidden is reaped then (or by the pass of the next owned zombie's
// monitor, and at the latest by Close's). Only when a reap by pid fails
// (someone else waited for it) does the pass list the children
// (children) and try each unowned one.
func (s *Supervisor) reapPass() int {
	s.forkMu.Lock()
	n := s.reapLocked()
	s.forkMu.Unlock()
	s.reapWanted()
	return n
}

// reapSoon is the pass a task's monitor makes once it has reaped its main
// child: at once, or, while a start holds forkMu for its fork (hundreds of
// microseconds for a vfork and exec), by the last holder of forkMu as it
// lets go (reapWanted), so that the monitor never waits for another
// task's fork. Either way the pass begins after the call, and, when it was
// handed on, before the start holding forkMu returns. With no start in
// flight, the monitor waits for a pass that holds forkMu and makes its
// own, so a lone task's orphans are reaped before it is done.
func (s *Supervisor) reapSoon() {
	s.passWanted.Store(true)
	if s.forksInFlight.Load() == 0 {
		s.forkMu.Lock()
		if s.passWanted.Swap(false) {
			s.reapLocked()
		}
		s.forkMu.Unlock()
	}
	s.reapWanted()
}

// reapWanted makes the pass reapSoon asked for, when forkMu is free; when
// it is not, its holder calls reapWanted after letting go. Every holder
// of forkMu calls it after unlocking.
func (s *Supervisor) reapWanted() {
	for s.passWanted.Load() && s.forkMu.TryLock() {
		if s.passWanted.Swap(false) {
			s.reapLocked()
		}
		s.forkMu.Unlock()
	}
}

// reapLocked is reapPass with forkMu held exclusively.
func (s *Supervisor) reapLocked() int {
	reaped := 0
	for {
		pid, ok := peekExited()
		if !ok {
			return reaped
		}
		if s.owned(pid) {
			// A main child not yet reaped hides the children behind it;
			// its monitor reaps it and then makes a pass of its own,
			// which sees past it.
			return reaped
		}
		if reapPid(pid) {
			reaped++
		} else {
			break // raced with someone else's wait: list instead
		}
	}
	for _, pid := range children() {
		if !s.owned(pid) && reapPid(pid) {
			reaped++
		}
	}
	return reaped
}

// owned reports whether pid is a child an exec.Cmd of s waits for.
func (s *Supervisor) owned(pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.direct[pid]
}

// peekExited returns an exited child of this process without reaping it.
func peekExited() (int, bool) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, false // ECHILD: no children at all
		}
		pid := siginfoPid(&info)
		return pid, pid > 0
	}
}

// siginfoPid returns si_pid of a waitid result: the first int32 of the
// union that follows signo, errno and code, aligned to a pointer (offset
// 16 on 64-bit, 12 on 32-bit; x/sys/unix keeps the union opaque). 0 means
// no child was waitable.
func siginfoPid(info *unix.Siginfo) int {
	const ptr = unsafe.Sizeof(uintptr(0))
	const off = (12 + ptr - 1) &^ (ptr - 1)
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off)))
}

// reapPid reaps pid if it has exited.
func reapPid(pid int) bool {
	var ws unix.WaitStatus
	got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	return err == nil && got == pid
}

// children returns the children of this process that an exec.Cmd of it
// does not wait for, zombies included: orphans reparented to it as a
// subreaper. The kernel gives an orphan to the first living thread of the
// reaper (find_new_reaper, find_alive_thread), the thread-group leader
// while it lives, and Go's main thread lives as long as the process: so
// one file, /proc/self/task/PID/children, lists them, not one per thread
// (a read each, for every task ended). When the leader
// has none to read, every thread's file is read; where the kernel lacks
// CONFIG_PROC_CHILDREN, /proc is scanned for PPid.
func children() []int {
	self := strconv.Itoa(os.Getpid())
	if b, err := os.ReadFile("/proc/self/task/" + self + "/children"); err == nil {
		return appendPids(nil, b)
	} else if errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat("/proc/self/task/" + self); err == nil {
			return childrenByScan() // no CONFIG_PROC_CHILDREN
		}
	}
	tids, _ := os.ReadDir("/proc/self/task")
	var pids []int
	for _, tid := range tids {
		if b, err := os.ReadFile("/proc/self/task/" + tid.Name() + "/children"); err == nil {
			pids = appendPids(pids, b)
		}
	}
	return pids
}

// appendPids appends the pids of a children file's text to pids.
func appendPids(pids []int, b []byte) []int {
	for _, w := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(w); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// childrenByScan finds this process's children by their PPid.
func childrenByScan() []int {
	self := os.Getpid()
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readStat(pid); ok && p.ppid == self {
			pids = append(pids, pid)
		}
	}
	return pids
}
