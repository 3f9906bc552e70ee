package main

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWaitingLauncher: a launcher waiting for a slot (one slot, held)
// waits in a read of the daemon's socket, and costs no thread the Go
// runtime does not need: no goroutine of its own blocks in another system
// call (every other thread parks in the runtime, in futex or nanosleep),
// the runtime's poller is never started (no epoll descriptor), and there
// is no thread beyond the runtime's: one per P (GOMAXPROCS), sysmon, and
// the one in the read, which gave its P up when it blocked. A thread that
// has just given its P up and not yet parked can make the runtime start
// one more, and on a busy host (`go test -race ./...` on two CPUs) one
// launcher of four was seen with one more again, so the bound holds for
// the fewest of several launchers, and every one is within two more. When the slot is free, every launcher runs its
// command.
func TestWaitingLauncher(t *testing.T) {
	e := newEnv(t, "--slots 1")
	held, _ := startHeld(t, e, false)
	const n = 4
	var pids []int
	var waiters []func() error
	for range n {
		c := e.cmd("", e.launcher(), "true")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, c.Process.Pid)
		waiters = append(waiters, c.Wait)
	}
	reader := map[int]int{} // the launcher's thread blocked in the read
	for _, pid := range pids {
		poll(t, "the launcher to block reading the socket", func() bool {
			for _, tid := range tasks(t, pid) {
				if inRead(pid, tid) {
					reader[pid] = tid
					return true
				}
			}
			return false
		})
	}
	bound := runtime.GOMAXPROCS(0) + 2
	fewest := 1 << 30
	for _, pid := range pids {
		tids := tasks(t, pid)
		fewest = min(fewest, len(tids))
		if len(tids) > bound+2 {
			t.Errorf("launcher %d waits with %d threads, want at most %d (GOMAXPROCS %d)", pid, len(tids), bound+2, bound-2)
		}
		for _, tid := range tids {
			if tid == reader[pid] {
				continue
			}
			if nr, ok := syscallOf(pid, tid); ok && nr != unix.SYS_FUTEX && nr != unix.SYS_NANOSLEEP {
				t.Errorf("launcher %d: thread %d is in system call %d while the launcher waits", pid, tid, nr)
			}
		}
		fds, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
		for _, fd := range fds {
			if l, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name()); strings.Contains(l, "eventpoll") {
				t.Errorf("launcher %d has the runtime's poller (fd %s: %s)", pid, fd.Name(), l)
			}
		}
	}
	if fewest > bound {
		t.Errorf("the fewest threads of %d waiting launchers: %d, want at most %d (GOMAXPROCS %d)", n, fewest, bound, bound-2)
	}
	held.Process.Kill()
	held.Wait()
	for i, wait := range waiters {
		if err := wait(); err != nil {
			t.Errorf("launcher %d: %v", pids[i], err)
		}
	}
}

// tasks returns the thread ids of process pid.
func tasks(t *testing.T, pid int) []int {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids
}

// syscallOf returns the system call thread tid of process pid is in; ok
// is false when it runs (or the kernel does not say).
func syscallOf(pid, tid int) (nr int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/syscall")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	nr, err = strconv.Atoi(f[0])
	return nr, err == nil && nr >= 0
}

// inRead reports whether thread tid of process pid is blocked in read(2)
// of a socket.
func inRead(pid, tid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/syscall")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 || f[0] != strconv.Itoa(unix.SYS_READ) {
		return false
	}
	fd, err := strconv.ParseInt(strings.TrimPrefix(f[1], "0x"), 16, 64)
	if err != nil {
		return false
	}
	l, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.FormatInt(fd, 10))
	return strings.HasPrefix(l, "socket:")
}
