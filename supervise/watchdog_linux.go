//go:build linux

package supervise

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"
)

// The watchdog (doc.go, "The watchdog"): a re-executed copy of this binary
// that outlives a SIGKILLed supervisor and ends what Pdeathsig cannot
// reach.

// watchdogConn is the supervisor's end of the watchdog.
type watchdogConn struct {
	cmd *exec.Cmd
	log *zap.Logger

	mu     sync.Mutex
	w      *os.File // the control pipe's write end; only this process has it
	broken bool     // a write failed: logged once
}

// startWatchdog starts exe in watchdog mode, in a process group of its
// own, outside the run's cgroup and without Pdeathsig (it must outlive
// this process), holding the read end of a CLOEXEC pipe as fd 3 and
// tokens, if any, as fd 4, and tells it the run's marker and cgroup.
func (s *Supervisor) startWatchdog(exe string, tokens *os.File) (*watchdogConn, error) {
	r, w, err := os.Pipe() // both CLOEXEC: no task inherits either end
	if err != nil {
		return nil, fmt.Errorf("supervise: watchdog pipe: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(exe)
	mode := "3"
	cmd.ExtraFiles = []*os.File{r}
	if tokens != nil {
		mode = "3,4"
		cmd.ExtraFiles = append(cmd.ExtraFiles, tokens)
	}
	cmd.Env = append(withoutMarker(os.Environ()), watchdogEnv+"="+mode)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.forkMu.RLock()
	err = cmd.Start()
	if err == nil {
		s.mu.Lock()
		s.direct[cmd.Process.Pid] = true
		s.mu.Unlock()
	}
	s.forkMu.RUnlock()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("supervise: starting the watchdog %s: %w", exe, err)
	}
	wd := &watchdogConn{cmd: cmd, log: s.log, w: w}
	wd.send(message{verb: verbRun, arg: s.runID})
	if s.cg != nil {
		wd.send(message{verb: verbCgroup, arg: s.cg.dir})
	}
	if s.mem != nil && s.mem.procs != nil {
		wd.send(message{verb: verbMemcg, arg: s.mem.group.Dir})
	}
	if s.mem != nil && s.mem.leaf != "" {
		wd.send(message{verb: verbLeaf, arg: s.mem.leaf})
	}
	return wd, nil
}

// send writes m to the watchdog. A failure (the watchdog died) is logged
// once; the run goes on without it.
func (wd *watchdogConn) send(m message) {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.broken || wd.w == nil {
		return
	}
	if _, err := wd.w.Write(m.encode()); err != nil {
		wd.broken = true
		wd.log.Warn("supervise: the watchdog is gone", zap.Error(err))
	}
}

// bye tells the watchdog that the run ended cleanly and waits for it.
func (wd *watchdogConn) bye() error {
	wd.send(message{verb: verbBye})
	wd.mu.Lock()
	err := wd.w.Close()
	wd.w = nil
	wd.mu.Unlock()
	if werr := wd.cmd.Wait(); werr != nil {
		err = errors.Join(err, fmt.Errorf("supervise: watchdog: %w", werr))
	}
	return err
}

// TempPath tells the watchdog to remove path (a file or a tree) should
// this process die before it says bye; call forget once the path is gone
// or is to be kept. Without a watchdog both do nothing. The Supervisor
// never removes path itself.
func (s *Supervisor) TempPath(path string) (forget func()) {
	if s.wd == nil || path == "" {
		return func() {}
	}
	s.wd.send(message{verb: verbTemp, arg: path})
	var once sync.Once
	return func() { once.Do(func() { s.wd.send(message{verb: verbForget, arg: path}) }) }
}

// SetTokens tells the watchdog how many jobserver tokens this process
// holds now, to be written back to Options.WatchdogTokens should it die.
// Without a watchdog it does nothing.
func (s *Supervisor) SetTokens(n int) {
	if n < 0 {
		panic("supervise: SetTokens: negative count")
	}
	if s.wd != nil {
		s.wd.send(message{verb: verbTokens, n: n})
	}
}

// MaybeWatchdog runs the watchdog and exits when this process was started
// as one (by a Supervisor with Options.Watchdog naming this executable);
// otherwise it returns at once. A main that offers Options.Watchdog calls
// it first.
func MaybeWatchdog() {
	mode, ok := os.LookupEnv(watchdogEnv)
	if !ok {
		return
	}
	// The terminal's signals are not for the watchdog: it ends when its
	// pipe does.
	signal.Ignore(unix.SIGINT, unix.SIGQUIT, unix.SIGHUP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU, unix.SIGPIPE)
	enc := zap.NewDevelopmentEncoderConfig()
	log := zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(os.Stderr), zap.WarnLevel))
	ctlFD, tokFD, _ := strings.Cut(mode, ",")
	ctl := openInherited(ctlFD, "watchdog-control")
	if ctl == nil {
		log.Error("supervise: watchdog: bad " + watchdogEnv + "=" + mode)
		os.Exit(2)
	}
	var tokens io.Writer
	if f := openInherited(tokFD, "watchdog-tokens"); f != nil {
		tokens = f
	}
	if err := RunWatchdog(ctl, tokens, log); err != nil {
		log.Error("supervise: watchdog", zap.Error(err))
		os.Exit(1)
	}
	os.Exit(0)
}

// openInherited returns the inherited descriptor fd (decimal text) as a
// file, marked CLOEXEC, or nil.
func openInherited(fd, name string) *os.File {
	n, err := strconv.Atoi(fd)
	if err != nil || n < 3 {
		return nil
	}
	unix.CloseOnExec(n)
	return os.NewFile(uintptr(n), name)
}

// RunWatchdog is the watchdog's body: it reads the protocol (protocol.go)
// from ctl until "bye", and returns nil at once then. On end of file (or a
// read error) without bye the supervisor is dead, and it cleans: SIGKILL
// to every process carrying the run's marker and cgroup.kill of the run's
// cgroup, repeated until none is left; then the held tokens written back
// to tokens ('+' each, as GNU make writes them), the temp paths removed,
// and the run's cgroup directories removed. The error reports what could
// not be cleaned. A malformed line is logged and skipped.
func RunWatchdog(ctl io.Reader, tokens io.Writer, log *zap.Logger) error {
	if log == nil {
		log = zap.NewNop()
	}
	var (
		run, cg, memcg, leaf string
		held                 int
		temps                = make(map[string]bool)
	)
	sc := bufio.NewScanner(ctl)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		m, err := parseMessage(sc.Bytes())
		if err != nil {
			log.Warn("supervise: watchdog", zap.Error(err))
			continue
		}
		switch m.verb {
		case verbBye:
			return nil
		case verbRun:
			run = m.arg
		case verbCgroup:
			cg = m.arg
		case verbMemcg:
			memcg = m.arg
		case verbLeaf:
			leaf = m.arg
		case verbTemp:
			temps[m.arg] = true
		case verbForget:
			delete(temps, m.arg)
		case verbTokens:
			held = m.n
		}
	}
	if err := sc.Err(); err != nil {
		log.Warn("supervise: watchdog: reading the control pipe", zap.Error(err))
	}
	var errs []error
	if run != "" || cg != "" || memcg != "" {
		if n := killRun(run, cg, memcg); n > 0 {
			errs = append(errs, fmt.Errorf("supervise: watchdog: %d processes of run %s survive", n, run))
		}
	}
	if held > 0 && tokens != nil {
		if _, err := tokens.Write(bytes.Repeat([]byte{'+'}, held)); err != nil {
			errs = append(errs, fmt.Errorf("supervise: watchdog: returning %d tokens: %w", held, err))
		}
	}
	for p := range temps {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("supervise: watchdog: %w", err))
		}
	}
	for _, dir := range []string{cg, memcg} {
		if dir == "" {
			continue
		}
		if err := removeCgroupTree(dir, 10*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if leaf != "" {
		if err := returnFromLeaf(leaf, os.Getpid()); err != nil {
			errs = append(errs, fmt.Errorf("supervise: watchdog: %w", err))
		}
	}
	return errors.Join(errs...)
}

// killRun kills every process carrying run's marker, the cgroup cg and
// the members of the v1 memory cgroup memcg (any may be ""), until none
// is left or 30 s pass; it returns how many were left.
func killRun(run, cg, memcg string) int {
	prefix := MarkerEnv + "=" + run + "."
	check := func(pid int) bool { return marked(pid, prefix) }
	inMemcg := func(pid int) bool { return slices.Contains(cgroupPids(memcg), pid) }
	deadline := time.Now().Add(30 * time.Second)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		if cg != "" {
			_ = cgroupKill(cg)
		}
		left := 0
		if run != "" {
			scanProcs(func(p proc, buf *[]byte) {
				if markedBuf(p.pid, prefix, buf) {
					left++
					signalIf(p.pid, unix.SIGKILL, check)
				}
			})
		}
		if cg != "" && cgroupPopulated(cg) {
			left++
		}
		if memcg != "" {
			for _, pid := range cgroupPids(memcg) {
				left++
				signalIf(pid, unix.SIGKILL, inMemcg)
			}
		}
		if left == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(wait)
	}
}
