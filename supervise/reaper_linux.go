//go:build linux

package supervise

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The reaper (doc.go, "The reaper"): with PR_SET_CHILD_SUBREAPER set, an
// orphaned descendant of a task becomes a child of this process, and when
// it exits it is a zombie here until waited for. waitpid(-1) would reap
// them, but would also take the exit status of a task's main child from
// the exec.Cmd.Wait waiting for it, so a pass lists this process's
// children and waits, WNOHANG, only for those no exec.Cmd owns.

// reapLoop runs a pass for each (coalesced) SIGCHLD until quit.
func (s *Supervisor) reapLoop() {
	defer close(s.reaperDone)
	for {
		select {
		case <-s.sigchld:
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
func (s *Supervisor) reapPass() int {
	s.forkMu.Lock()
	defer s.forkMu.Unlock()
	reaped := 0
	for _, pid := range children() {
		s.mu.Lock()
		owned := s.direct[pid]
		s.mu.Unlock()
		if owned {
			continue
		}
		var ws unix.WaitStatus
		if got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil); err == nil && got == pid {
			reaped++
		}
	}
	return reaped
}

// children returns this process's children, zombies included: the union
// of /proc/self/task/*/children (each thread's; an orphan is reparented to
// any thread), or, where the kernel lacks CONFIG_PROC_CHILDREN, a /proc
// scan for PPid.
func children() []int {
	files, _ := filepath.Glob("/proc/self/task/*/children")
	if len(files) == 0 {
		return childrenByScan()
	}
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, w := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(w); err == nil {
				pids = append(pids, pid)
			}
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
