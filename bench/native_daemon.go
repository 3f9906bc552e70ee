package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/internal/procstat"
	"github.com/numasteal/numasteal/launch"
)

// The daemon of the launcher rows.
//
// Each launcher run gets a daemon socket of its own, so no run finds a
// daemon an earlier one left (its slots, queues or start-up state): the
// first launcher of the run starts "numasteal serve" on it, as on a build
// engineer's machine, and its start is in the run's wall time. The
// sockets of one benchmark are all in one directory, made for it and
// removed after it, and the daemon keeps its learned peak-RSS history
// beside its socket (launch.Paths.Dir/peak-rss): every daemon of one
// benchmark reads what the ones before it learned, so the history
// persists across repetitions and contenders, and never across
// benchmarks.
//
// When the run's builds have ended, stopDaemon asks the daemon how many
// jobs it admitted (a launcher that reached no daemon runs its command by
// itself, which would measure nothing of numasteal), reads its CPU time
// (user+sys from /proc/PID/stat: it is not a child of the build, so the
// build's rusage lacks it), and stops it: SIGTERM (it saves its history
// and releases its lock), then SIGKILL. The daemon's pid is the one in
// its lock file while the lock is held. Its idle exit (daemonIdle) is the
// last resort should the benchmark itself be killed with SIGKILL.

// daemonIdle is the daemon's --idle: long enough that no phase of a
// build without compiles ends it mid-build, short enough that a daemon
// whose benchmark was killed outright does not linger.
const daemonIdle = "30s"

// maxSocketPath is the longest Unix socket path (sun_path less its NUL).
const maxSocketPath = 107

// daemonSession hands out the sockets of one benchmark's launcher runs.
type daemonSession struct {
	dir       string // 0700, made by newDaemonSession, removed by close
	numasteal string // the binary whose "serve" the launchers start
	sockets   []launch.Paths
}

// newDaemonSession makes the session's directory under work.
func newDaemonSession(work, numasteal string) (*daemonSession, error) {
	dir, err := os.MkdirTemp(work, "nsd-")
	if err != nil {
		return nil, fmt.Errorf("bench: daemon directory: %w", err)
	}
	if longest := filepath.Join(dir, "s9999"); len(longest) > maxSocketPath {
		os.Remove(dir)
		return nil, fmt.Errorf("bench: the daemon's socket %s would be longer than %d bytes: use a shorter work directory", longest, maxSocketPath)
	}
	return &daemonSession{dir: dir, numasteal: numasteal}, nil
}

// next returns the paths of a new socket.
func (s *daemonSession) next() launch.Paths {
	sock := filepath.Join(s.dir, "s"+strconv.Itoa(len(s.sockets)+1))
	p := launch.PathsFromEnv(func(k string) string {
		if k == "NUMASTEAL_SOCKET" {
			return sock
		}
		return ""
	})
	s.sockets = append(s.sockets, p)
	return p
}

// env returns the variables that send a launcher to p's daemon, started
// from s.numasteal.
func (s *daemonSession) env(p launch.Paths) []string {
	return []string{
		"NUMASTEAL_SOCKET=" + p.Socket,
		"NUMASTEAL_BIN=" + s.numasteal,
		"NUMASTEAL_SERVE_FLAGS=--idle " + daemonIdle,
	}
}

// close stops any daemon still on one of the session's sockets (one a
// launcher started just as its build was killed) and removes the
// directory.
func (s *daemonSession) close() error {
	var errs []error
	for _, p := range s.sockets {
		if _, err := stopDaemon(p); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, fmt.Errorf("bench: %w", err))
	}
	return errors.Join(errs...)
}

// daemonUse is what a run's daemon did.
type daemonUse struct {
	ran  bool    // a daemon held the lock when the build ended
	jobs int64   // the jobs it admitted
	cpu  float64 // its user+sys seconds
}

// stopDaemon stops the daemon that holds p's lock, if one does, and
// returns what it did.
func stopDaemon(p launch.Paths) (daemonUse, error) {
	f, err := os.Open(p.Lock)
	if errors.Is(err, fs.ErrNotExist) {
		return daemonUse{}, nil
	}
	if err != nil {
		return daemonUse{}, fmt.Errorf("bench: daemon lock: %w", err)
	}
	defer f.Close()
	held := func() bool {
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			unix.Flock(int(f.Fd()), unix.LOCK_UN)
			return false
		}
		return true
	}
	if !held() {
		return daemonUse{}, nil
	}
	pid, err := lockPID(p.Lock)
	if err != nil {
		return daemonUse{}, err
	}
	proc, err := openProcess(pid)
	if err != nil {
		if !held() {
			return daemonUse{}, nil // it exited meanwhile
		}
		return daemonUse{}, fmt.Errorf("bench: the daemon on %s (pid %d): %w", p.Socket, pid, err)
	}
	defer proc.close()
	if !held() {
		return daemonUse{}, nil // it exited before the pid was pinned
	}
	use := daemonUse{ran: true, jobs: daemonJobs(p.Socket)}
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		if user, sys, err := parseProcStatCPU(data); err == nil {
			use.cpu = user + sys
		}
	}
	for _, step := range []struct {
		sig  unix.Signal
		wait time.Duration
	}{{unix.SIGTERM, 10 * time.Second}, {unix.SIGKILL, 5 * time.Second}} {
		proc.signal(step.sig)
		for deadline := time.Now().Add(step.wait); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if !held() {
				return use, nil
			}
		}
	}
	return use, fmt.Errorf("bench: the daemon on %s (pid %d) does not exit", p.Socket, pid)
}

// lockPID reads the pid the daemon writes in its lock file once it holds
// the lock, waiting a moment for a daemon that has only just taken it.
func lockPID(lock string) (int, error) {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		data, err := os.ReadFile(lock)
		if err != nil {
			return 0, fmt.Errorf("bench: daemon lock: %w", err)
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
			return pid, nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("bench: daemon lock %s holds no pid: %q", lock, data)
		}
	}
}

// daemonJobs asks the daemon on socket how many jobs it admitted; 0 when
// it does not answer.
func daemonJobs(socket string) int64 {
	c, err := launch.Dial(socket)
	if err != nil {
		return 0
	}
	defer c.Close()
	m, err := c.Call(launch.NewMsg("status"))
	if err != nil {
		return 0
	}
	js, _ := m.Get("json")
	var st struct {
		Done int64 `json:"done"`
	}
	if json.Unmarshal([]byte(js), &st) != nil {
		return 0
	}
	return st.Done
}

// userHZ is the unit of /proc's clock-tick counts, fixed at 100 by the
// kernel's ABI whatever its internal tick rate.
const userHZ = 100

// parseProcStatCPU returns the user and system seconds of a process from
// its /proc/PID/stat (proc(5): utime and stime are fields 14 and 15,
// counted after the command name in parentheses, which may hold spaces
// and parentheses itself).
func parseProcStatCPU(data []byte) (user, sys float64, err error) {
	t, err := parseProcStatTimes(data)
	return t[0], t[1], err
}

// parseProcStatTimes returns fields 14 to 17 of /proc/PID/stat in
// seconds: utime, stime, and cutime, cstime (the children it waited for).
func parseProcStatTimes(data []byte) (t [4]float64, err error) {
	st, err := procstat.Parse(data)
	if err != nil {
		return t, fmt.Errorf("bench: %w", err)
	}
	for k := range t {
		v, err := st.Uint(14 + k)
		if err != nil {
			return t, fmt.Errorf("bench: %w", err)
		}
		t[k] = float64(v) / userHZ
	}
	return t, nil
}

// daemonLogTail returns the end of p's daemon log, for an error message.
func daemonLogTail(p launch.Paths) string {
	data, err := os.ReadFile(p.Log)
	if err != nil {
		return "(no daemon log: no daemon was started)"
	}
	return tail(data, 2000)
}
