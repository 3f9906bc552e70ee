//go:build linux

package supervise

import (
	"bytes"
	"errors"
	"os"
	"strconv"

	"github.com/numasteal/numasteal/internal/procstat"
	"golang.org/x/sys/unix"
)

// proc is what a /proc scan learns of one process.
type proc struct {
	pid, ppid, pgid int
	state           byte // R, S, D, T, t, Z, X, ...
}

// dead reports whether p has exited (a zombie, or dying).
func (p proc) dead() bool { return p.state == 'Z' || p.state == 'X' || p.state == 'x' }

// parseStat reads the pid, state, parent and process group of a
// /proc/PID/stat text.
func parseStat(b []byte) (proc, bool) {
	st, err := procstat.Parse(b)
	if err != nil {
		return proc{}, false
	}
	ppid, err1 := st.Int(4)
	pgid, err2 := st.Int(5)
	if err1 != nil || err2 != nil {
		return proc{}, false
	}
	return proc{pid: st.PID, ppid: ppid, pgid: pgid, state: st.State()}, true
}

// readStat reads /proc/PID/stat; false when the process is gone.
func readStat(pid int) (proc, bool) {
	var buf []byte
	return readStatBuf(pid, &buf)
}

// readStatBuf is readStat reading into *buf (grown as needed, kept for
// the next call).
func readStatBuf(pid int, buf *[]byte) (proc, bool) {
	b, ok := readProcFile(pid, "stat", buf)
	if !ok {
		return proc{}, false
	}
	return parseStat(b)
}

// readProcFile reads /proc/PID/NAME whole into *buf with bare system
// calls: a scan reads two files of every process on the machine, and
// os.ReadFile's stat and allocation per file doubled its cost.
func readProcFile(pid int, name string, buf *[]byte) ([]byte, bool) {
	var path [64]byte
	p := append(append(strconv.AppendInt(append(path[:0], "/proc/"...), int64(pid), 10), '/'), name...)
	fd, err := unix.Open(string(p), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	if cap(*buf) < 4096 {
		*buf = make([]byte, 0, 4096)
	}
	b := (*buf)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			*buf = b
			return nil, false
		}
		if n == 0 {
			*buf = b
			return b, true
		}
		b = b[:len(b)+n]
	}
}

// leaderChildren returns the children of this process's main thread
// (/proc/self/task/PID/children, CONFIG_PROC_CHILDREN), reading into
// *buf: where the kernel puts every orphan reparented to this process
// when it is a subreaper (find_new_reaper takes its first live thread,
// the leader, which a Go program never ends), beside the children the
// main thread forked itself. False when the file cannot be read.
func leaderChildren(buf *[]byte) ([]int, bool) {
	self := os.Getpid()
	var name [32]byte
	b, ok := readProcFile(self, string(strconv.AppendInt(append(name[:0], "task/"...), int64(self), 10))+"/children", buf)
	if !ok {
		return nil, false
	}
	var pids []int
	for _, f := range bytes.Fields(b) {
		pid, err := strconv.Atoi(string(f))
		if err != nil {
			return nil, false
		}
		pids = append(pids, pid)
	}
	return pids, true
}

// hasMarker reports whether the NUL-separated environment env holds an
// entry that starts with prefix (a marker "NUMASTEAL_SUPERVISOR=run.task"
// followed by NUL for one task, or "NUMASTEAL_SUPERVISOR=run." for a whole
// run).
func hasMarker(env []byte, prefix string) bool {
	for len(env) > 0 {
		var entry []byte
		entry, env, _ = bytes.Cut(env, []byte{0})
		if len(entry) >= len(prefix) && string(entry[:len(prefix)]) == prefix {
			return true
		}
		if prefix[len(prefix)-1] == 0 && string(entry) == prefix[:len(prefix)-1] {
			return true
		}
	}
	return false
}

// marked reports whether process pid carries the marker prefix (see
// hasMarker). A process whose environment cannot be read (another user's,
// without root; a zombie has none) is not marked.
func marked(pid int, prefix string) bool {
	var buf []byte
	return markedBuf(pid, prefix, &buf)
}

// markedBuf is marked reading into *buf.
func markedBuf(pid int, prefix string, buf *[]byte) bool {
	b, ok := readProcFile(pid, "environ", buf)
	return ok && hasMarker(b, prefix)
}

// scanProcs calls fn for every live process on the machine but this one
// (zombies are skipped: they hold nothing and are reaped, not killed),
// with a buffer fn may pass to markedBuf.
func scanProcs(fn func(p proc, buf *[]byte)) {
	d, err := os.Open("/proc")
	if err != nil {
		return
	}
	defer d.Close()
	self := os.Getpid()
	var buf []byte
	for {
		names, err := d.Readdirnames(256)
		for _, name := range names {
			pid, err := strconv.Atoi(name)
			if err != nil || pid == self {
				continue
			}
			if p, ok := readStatBuf(pid, &buf); ok && !p.dead() {
				fn(p, &buf)
			}
		}
		if err != nil {
			return
		}
	}
}

// signalIf sends sig to pid if check(pid) still holds once a pidfd pins the
// process, so a pid recycled between the scan and the signal is never hit:
// the pidfd refers to the process that had the pid when it was opened, and
// check, run after that, reads the same process (or finds it gone). Where
// pidfds are missing (Linux < 5.3) it falls back to kill(2) after check.
func signalIf(pid int, sig unix.Signal, check func(pid int) bool) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) && check(pid) {
			_ = unix.Kill(pid, sig)
		}
		return
	}
	defer unix.Close(fd)
	if check(pid) {
		_ = unix.PidfdSendSignal(fd, sig, nil, 0)
	}
}
