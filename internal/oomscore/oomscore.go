// Package oomscore raises the OOM score adjustment (/proc/PID/oom_score_adj)
// of the processes a build runs, so that when memory runs out the kernel's
// OOM killer takes a compile, which numasteal runs again, before the
// program that schedules the build, whose death ends every compile of it.
//
// The kernel scores each candidate by the memory it holds (resident pages,
// swap entries and page tables) plus oom_score_adj thousandths of the pages
// the OOM-ing domain may use (the machine's memory, or the limit of the
// cgroup that ran out), and kills the highest (mm/oom_kill.c,
// oom_badness). At Task, a process scores above any process left at 0
// that holds less than it plus half that limit: a compile goes first
// unless the scheduler alone holds half the limit. Children inherit the
// value at fork.
//
// Raising needs no privilege; lowering below what a process started with
// needs CAP_SYS_RESOURCE, and a value some parent chose higher is kept,
// so nothing here lowers one below what it had.
package oomscore

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/numasteal/numasteal/internal/kernfile"
)

// Task is the adjustment numasteal gives the commands of a build.
const Task = 500

// path names pid's oom_score_adj; pid 0 is this process.
func path(pid int) string {
	if pid == 0 {
		return "/proc/self/oom_score_adj"
	}
	return "/proc/" + strconv.Itoa(pid) + "/oom_score_adj"
}

// Get returns the oom_score_adj of pid (0: this process).
func Get(pid int) (int, error) {
	var buf [16]byte
	b, err := kernfile.Read(path(pid), buf[:0])
	if err != nil {
		return 0, fmt.Errorf("oomscore: %w", err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("oomscore: %s: %w", path(pid), err)
	}
	return v, nil
}

// Set writes adj, which must be in -1000..1000, as the oom_score_adj of
// pid (0: this process). The caller knows the value is not lower than the
// present one, or is the one pid had before it raised it (which needs no
// privilege either); Raise finds out.
func Set(pid, adj int) error {
	if adj < -1000 || adj > 1000 {
		return fmt.Errorf("oomscore: adjustment %d: want -1000 to 1000", adj)
	}
	var buf [8]byte
	if err := kernfile.Write(path(pid), strconv.AppendInt(buf[:0], int64(adj), 10)); err != nil {
		return fmt.Errorf("oomscore: %w", err)
	}
	return nil
}

// Raise sets the oom_score_adj of pid (0: this process) to adj when it is
// lower, and returns the value it had and whether it wrote.
func Raise(pid, adj int) (prev int, raised bool, err error) {
	prev, err = Get(pid)
	if err != nil || prev >= adj {
		return prev, false, err
	}
	return prev, true, Set(pid, adj)
}
