package memory

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// A job's processes are the tree below its root process: the launcher or
// the handed-off compiler, and every process it started (cc1, as,
// collect2, ld). The tree is read from /proc/PID/task/TID/children,
// which lists the children each thread forked (Linux 3.5, with
// CONFIG_PROC_CHILDREN, as every distribution builds it).

// Tree returns pid and its descendants, parents before children, read
// below proc ("/proc"), leaving out the calling process and what it
// started. A pid that is gone gives nil.
func Tree(proc string, pid int) []int {
	if pid <= 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(proc, strconv.Itoa(pid))); err != nil {
		return nil
	}
	out := []int{pid}
	for i := 0; i < len(out) && len(out) < maxTree; i++ {
		out = appendChildren(out, proc, out[i])
	}
	return out
}

// Children returns the children of pid, read below proc.
func Children(proc string, pid int) []int {
	return appendChildren(nil, proc, pid)
}

// maxTree bounds a tree's walk: a fork bomb under a job must not make the
// sampler walk forever.
const maxTree = 4096

func appendChildren(out []int, proc string, pid int) []int {
	dir := filepath.Join(proc, strconv.Itoa(pid), "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	self := os.Getpid()
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "children"))
		if err != nil {
			continue
		}
		for _, f := range bytes.Fields(b) {
			// The calling process is never part of a job's tree: a
			// daemon started by a build's first launcher is that
			// launcher's child until the launcher ends, and must not
			// count as the job's memory, let alone be stopped with it.
			if c, err := strconv.Atoi(string(f)); err == nil && c > 0 && c != self {
				out = append(out, c)
			}
		}
	}
	return out
}

// TreeRSS returns the resident memory of pid and its descendants, in
// bytes: the sum of their /proc/PID/statm resident pages. Pages shared
// between them (the C library, a forked parent's) count once per
// process, so this errs high, the safe side for admission.
func TreeRSS(proc string, pid int) int64 {
	var sum int64
	for _, p := range Tree(proc, pid) {
		b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(p), "statm"))
		if err != nil {
			continue
		}
		if n, ok := statmResident(b); ok {
			sum += n
		}
	}
	return sum
}

// SignalTree stops (SIGSTOP) or continues (SIGCONT) pid and its
// descendants. Stopping walks the tree again until a walk finds no
// process it has not stopped, so that a child forked between the walk
// and its parent's stop is stopped too; before each walk it waits (a
// little, see stopWait) for the processes it signalled to be stopped,
// since kill returns before the signal acts, and a parent inside fork
// then adds its child after the walk. Continuing goes children first,
// so that no parent runs on to wait for a child still stopped.
func SignalTree(proc string, pid int, stop bool) error {
	if !stop {
		t := Tree(proc, pid)
		for i := len(t) - 1; i >= 0; i-- {
			unix.Kill(t[i], unix.SIGCONT)
		}
		return nil
	}
	done := make(map[int]bool)
	var fresh []int
	for round := 0; round < 8; round++ {
		fresh = fresh[:0]
		for _, p := range Tree(proc, pid) {
			if !done[p] {
				done[p] = true
				fresh = append(fresh, p)
				if err := unix.Kill(p, unix.SIGSTOP); err != nil && p == pid && err != unix.ESRCH {
					return err
				}
			}
		}
		if len(fresh) == 0 {
			return nil
		}
		waitStopped(proc, fresh)
	}
	return nil
}

// stopWait bounds how long SignalTree waits for the processes it sent
// SIGSTOP to stop: one in uninterruptible sleep (a page fault on a slow
// disk) stops only when it wakes, and the walk goes on without it.
const stopWait = 100 * time.Millisecond

// waitStopped waits until each of pids is stopped, a zombie or gone, or
// stopWait has passed.
func waitStopped(proc string, pids []int) {
	end := time.Now().Add(stopWait)
	for _, p := range pids {
		for wait := 10 * time.Microsecond; !isStopped(proc, p) && time.Now().Before(end); wait = min(2*wait, time.Millisecond) {
			time.Sleep(wait)
		}
	}
}

// isStopped reports whether /proc/PID/stat shows pid stopped (T, or t
// under a tracer), dead (Z, X) or gone.
func isStopped(proc string, pid int) bool {
	b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	switch b[i+2] {
	case 'T', 't', 'Z', 'X':
		return true
	}
	return false
}

// signalPending reports whether pid has a signal pending that would end
// or interrupt it: anything but SIGCHLD, SIGCONT, SIGWINCH and SIGURG,
// which a stopped process may well have pending for no one's sake, and
// the stop signals, SignalTree's own SIGSTOP among them (pending while
// the process is in uninterruptible sleep, an exec or a page fault).
func signalPending(proc string, pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(filepath.Join(proc, strconv.Itoa(pid), "status"))
	if err != nil {
		return false
	}
	const ignore = 1<<(unix.SIGCHLD-1) | 1<<(unix.SIGCONT-1) | 1<<(unix.SIGWINCH-1) | 1<<(unix.SIGURG-1) |
		1<<(unix.SIGSTOP-1) | 1<<(unix.SIGTSTP-1) | 1<<(unix.SIGTTIN-1) | 1<<(unix.SIGTTOU-1)
	for _, key := range []string{"SigPnd:", "ShdPnd:"} {
		for _, line := range bytes.Split(b, []byte{'\n'}) {
			if rest, ok := bytes.CutPrefix(line, []byte(key)); ok {
				m, err := strconv.ParseUint(string(bytes.TrimSpace(rest)), 16, 64)
				if err == nil && m&^ignore != 0 {
					return true
				}
			}
		}
	}
	return false
}
