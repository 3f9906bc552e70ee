//go:build linux

package supervise

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/internal/freelist"
	"github.com/numasteal/numasteal/internal/oomscore"
)

// Supervisor starts tasks and sees that each ends whole; see doc.go. It is
// safe for concurrent use. Close it when the run is over.
type Supervisor struct {
	runID  string
	grace  time.Duration
	log    *zap.Logger
	mech   Mechanisms
	cg     *cgroupRun // nil without the cgroup mechanism
	forker *forker

	// forkMu is held shared by each start from the fork to the
	// registration of the child in direct, and exclusively by a reaper
	// pass, so the reaper never sees a direct child it does not know yet.
	// forksInFlight counts the starts holding it; passWanted is a pass
	// asked for by reapSoon and not begun yet.
	forkMu        sync.RWMutex
	forksInFlight atomic.Int32
	passWanted    atomic.Bool

	mu     sync.Mutex
	direct map[int]bool       // children whose exit status an exec.Cmd waits for
	live   map[*Task]struct{} // tasks not yet done
	nextID uint64             // task ids, from 1
	closed bool               // Close was called
	wg     sync.WaitGroup     // one per task monitor

	// The reaper (Options.Subreaper); nil channels without it.
	quit       chan struct{}
	reaperDone chan struct{}

	wd *watchdogConn // nil without a watchdog

	// wakes are idle eventfds for the polls of StartHere's tasks
	// (watchExitHere), closed by Close.
	wakes freelist.List[int]

	mem *taskMemory // the tasks' memory cgroup; nil without one

	oomAdj    int         // Options.OOMScoreAdj when above this process's, else 0
	oomWarned atomic.Bool // a failed write of a task's oom_score_adj was logged
}

// New returns a Supervisor set up as o says, with each mechanism that
// works on this machine; Mechanisms reports which, and so does a log
// line. It fails when o is invalid, Subreaper is asked for and the prctl
// fails, or the watchdog cannot be started; a missing cgroup v2 is not a
// failure.
func New(o Options) (*Supervisor, error) {
	s := &Supervisor{
		runID:  o.RunID,
		grace:  o.Grace,
		log:    o.Logger,
		direct: make(map[int]bool),
		live:   make(map[*Task]struct{}),
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.grace <= 0 {
		s.grace = 2 * time.Second
	}
	if s.runID == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		s.runID = strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
	} else if !validRunID(s.runID) {
		return nil, fmt.Errorf("supervise: New: run id %q: want 1 to 64 of [A-Za-z0-9_-]", s.runID)
	}
	if o.OOMScoreAdj < 0 || o.OOMScoreAdj > 1000 {
		return nil, fmt.Errorf("supervise: New: OOMScoreAdj %d: want 0 to 1000", o.OOMScoreAdj)
	}
	if o.OOMScoreAdj > 0 {
		own, err := oomscore.Get(0)
		if err != nil {
			s.log.Warn("supervise: tasks keep this process's OOM score adjustment", zap.Error(err))
		} else if o.OOMScoreAdj > own {
			s.oomAdj = o.OOMScoreAdj
		}
	}
	s.mech.Pdeathsig = true
	if o.Subreaper {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return nil, fmt.Errorf("supervise: New: PR_SET_CHILD_SUBREAPER: %w", err)
		}
		s.mech.Subreaper = true
	} else {
		// Already a subreaper (an earlier Supervisor, or the program's own
		// prctl): orphans come here whatever o says, so they must be reaped.
		var on int32
		if unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&on)), 0, 0, 0) == nil && on != 0 {
			s.mech.Subreaper = true
		}
	}
	if o.NoCgroup {
		s.mech.NoCgroupReason = "disabled by Options.NoCgroup"
	} else if cg, err := makeRunCgroup(o.CgroupParent, s.runID); err != nil {
		s.mech.NoCgroupReason = err.Error()
	} else {
		s.cg = cg
		s.mech.Cgroup = cg.dir
	}
	if o.TaskMemoryLimit > 0 {
		if m, err := makeTaskMemory(s.runID, o.TaskMemoryLimit, s.cg); err != nil {
			s.mech.NoTaskMemoryReason = err.Error()
		} else {
			s.mem = m
			s.mech.TaskMemory = m.group
		}
	}
	n := o.ForkThreads
	if n <= 0 {
		n = 1
	}
	var enter func() error
	if s.mem != nil && s.mem.threadsMove() {
		enter = s.mem.enterThread
	}
	s.forker = newForker(n, s.log, enter)
	if o.Watchdog != "" {
		wd, err := s.startWatchdog(o.Watchdog, o.WatchdogTokens)
		if err != nil {
			_ = s.release()
			return nil, err
		}
		s.wd = wd
		s.mech.Watchdog = wd.cmd.Process.Pid
	}
	if s.mech.Subreaper {
		s.quit = make(chan struct{})
		s.reaperDone = make(chan struct{})
		go s.reapLoop()
	}
	s.log.Info("supervise: mechanisms",
		zap.String("run", s.runID),
		zap.String("cgroup", s.mech.Cgroup),
		zap.String("no_cgroup_reason", s.mech.NoCgroupReason),
		zap.String("task_memory", s.mech.TaskMemory.Dir),
		zap.String("no_task_memory_reason", s.mech.NoTaskMemoryReason),
		zap.Bool("subreaper", s.mech.Subreaper),
		zap.Bool("pdeathsig", s.mech.Pdeathsig),
		zap.Int("watchdog", s.mech.Watchdog))
	return s, nil
}

// RunID returns the run's id, the first part of every task's marker.
func (s *Supervisor) RunID() string { return s.runID }

// Mechanisms reports the mechanisms in use.
func (s *Supervisor) Mechanisms() Mechanisms { return s.mech }

// Task is one started command and everything it starts. Its methods are
// safe for concurrent use.
type Task struct {
	s      *Supervisor
	id     string // RUNID.N, the marker's value
	prefix string // "NUMASTEAL_SUPERVISOR=RUNID.N\x00", as hasMarker wants it
	cmd    *exec.Cmd
	pid    int // the main child; also its process group
	// exit watches the main child's exit through a pidfd in Go's poller;
	// nil where pidfds do not work, and a goroutine blocks in waitid.
	exit *exitWatch
	// monitor is the task's monitor until Monitor runs it, for a task
	// started by StartUnmonitored; nil otherwise.
	monitor func()

	// cgMu guards the task's cgroup against its hand-back: once the task
	// has ended, tcg is nil and the cgroup may already serve another task.
	cgMu sync.Mutex
	tcg  *taskCgroup // nil without the cgroup mechanism, or once ended

	exited     chan struct{} // closed when the main child has exited (not reaped)
	exitedOnce sync.Once
	done       chan struct{} // closed when the task has ended whole
	term       chan struct{} // closed by Terminate
	kill       chan struct{} // closed by Kill
	once       struct{ term, kill sync.Once }

	cause error // set before done is closed
	err   error // cmd.Wait's, set before done is closed
}

// Start starts cmd as a task: in a process group of its own (unless
// cmd.SysProcAttr asks for Setsid), with the task's marker added to its
// environment (cmd.Env, or this process's when nil), inside the task's
// cgroup when there is one, with Pdeathsig SIGKILL, from a kept fork
// thread. Build cmd with exec.Command, not exec.CommandContext: ctx is
// given here, and when it is done the task is ended (SIGTERM, Grace,
// SIGKILL) with Cause context.Cause(ctx). Do not call cmd.Wait: the
// Supervisor does, and Task.Wait returns its error.
func (s *Supervisor) Start(ctx context.Context, cmd *exec.Cmd) (*Task, error) {
	return s.start(ctx, cmd, nil, monitored)
}

// StartPlaced is Start with the child confined to p from its first
// instruction: the kept fork thread is narrowed to p's CPUs (and memory
// policy) for the fork and restored after (compare affinity.StartPlaced).
func (s *Supervisor) StartPlaced(ctx context.Context, cmd *exec.Cmd, p affinity.Placement) (*Task, error) {
	if p.CPUs.IsEmpty() {
		return nil, fmt.Errorf("supervise: StartPlaced: %w", affinity.ErrEmptySet)
	}
	return s.start(ctx, cmd, &p, monitored)
}

// StartUnmonitored is Start (p nil) or StartPlaced for a caller that has
// a goroutine to spare for the task: the task gets no monitor goroutine,
// and the caller must call Task.Monitor, once, which does the monitor's
// work (ending the task when its main child exits, when ctx is done, on
// Terminate or Kill) in the calling goroutine. Until Monitor is called,
// nothing ends the task. A process task's goroutine waits for its task
// anyway; monitoring it there saves a goroutine and a wake-up per task.
func (s *Supervisor) StartUnmonitored(ctx context.Context, cmd *exec.Cmd, p *affinity.Placement) (*Task, error) {
	if p != nil && p.CPUs.IsEmpty() {
		return nil, fmt.Errorf("supervise: StartUnmonitored: %w", affinity.ErrEmptySet)
	}
	return s.start(ctx, cmd, p, unmonitored)
}

// StartHere is StartUnmonitored with the child forked from the calling
// goroutine's own thread rather than handed to a kept fork thread: the
// goroutine is locked to its thread (runtime.LockOSThread) from the fork
// until Task.Monitor returns, so that the thread, whose exit would send
// the child its Pdeathsig, lives at least as long as the child. For a
// placement the thread's CPU mask is narrowed to p's CPUs for the fork
// (the child inherits it) and stays so until Task.Monitor returns. The
// same goroutine must then call Task.Monitor, which waits for the child's
// exit in a system call of this thread (poll(2) on a pidfd), so the exit
// wakes this thread and no other, on the CPUs the child leaves free. A
// task process's goroutine does it all: no hand-off to another thread or
// goroutine between deciding to run a command, forking it, and reaping it,
// as with make.
//
// A placement with a memory policy goes to a kept fork thread, as with
// StartUnmonitored, and so does every start where pidfds do not work; so
// does the fork of a call from the main thread where the tasks' memory
// cgroup is v1, which the main thread must not enter (the task is still
// monitored here).
func (s *Supervisor) StartHere(ctx context.Context, cmd *exec.Cmd, p *affinity.Placement) (*Task, error) {
	if p != nil && p.CPUs.IsEmpty() {
		return nil, fmt.Errorf("supervise: StartHere: %w", affinity.ErrEmptySet)
	}
	if p != nil && p.Mem != nil {
		return s.start(ctx, cmd, p, unmonitored)
	}
	return s.start(ctx, cmd, p, here)
}

// startMode is how start forks and who monitors the task.
type startMode uint8

const (
	monitored   startMode = iota // a kept fork thread; a monitor goroutine
	unmonitored                  // a kept fork thread; Task.Monitor
	here                         // the caller's thread, locked; Task.Monitor
)

// Monitor runs the monitor of a task started by StartUnmonitored in the
// calling goroutine and returns once the task is Done. It panics when
// the task has a monitor already or Monitor was called before.
func (t *Task) Monitor() {
	if t.monitor == nil {
		panic("supervise: Monitor: the task has a monitor already")
	}
	m := t.monitor
	t.monitor = nil
	m()
}

func (s *Supervisor) start(ctx context.Context, cmd *exec.Cmd, place *affinity.Placement, mode startMode) (*Task, error) {
	if ctx == nil {
		panic("supervise: Start: nil context")
	}
	if cmd == nil {
		panic("supervise: Start: nil command")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	s.nextID++
	n := s.nextID
	s.wg.Add(1)
	s.mu.Unlock()

	tid := strconv.FormatUint(n, 10)
	t := &Task{
		s:      s,
		id:     s.runID + "." + tid,
		cmd:    cmd,
		exited: make(chan struct{}),
		done:   make(chan struct{}),
		term:   make(chan struct{}),
		kill:   make(chan struct{}),
	}
	t.prefix = MarkerEnv + "=" + t.id + "\x00"
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(withoutMarker(env), MarkerEnv+"="+t.id)
	attr := &syscall.SysProcAttr{}
	if cmd.SysProcAttr != nil {
		*attr = *cmd.SysProcAttr
	}
	if !attr.Setsid {
		attr.Setpgid, attr.Pgid = true, 0
	}
	attr.Pdeathsig = syscall.SIGKILL
	if s.cg != nil {
		tc, err := s.cg.get()
		if err != nil {
			s.wg.Done()
			return nil, err
		}
		t.tcg = tc
		attr.UseCgroupFD, attr.CgroupFD = true, tc.fd
	}
	cmd.SysProcAttr = attr

	if mode == here {
		runtime.LockOSThread()
	}
	s.forkMu.RLock()
	s.forksInFlight.Add(1)
	var (
		err     error
		inside  bool   // the child was born in the tasks' memory cgroup
		restore func() // puts the thread's CPU mask back; nil: unchanged
	)
	if mode == here {
		inside, restore, err = s.startHere(cmd, place)
	} else {
		inside, err = s.forker.start(cmd, place)
	}
	if err == nil {
		t.pid = cmd.Process.Pid
		if s.mem != nil && !inside {
			s.enterTaskMemory(t.pid)
		}
		if s.oomAdj != 0 {
			s.raiseOOMScore(t.pid)
		}
		s.mu.Lock()
		s.direct[t.pid] = true
		s.live[t] = struct{}{}
		s.mu.Unlock()
	}
	s.forksInFlight.Add(-1)
	s.forkMu.RUnlock()
	s.reapWanted()
	if err != nil {
		if t.tcg != nil {
			if perr := s.cg.put(t.tcg, 10*time.Second); perr != nil {
				s.log.Warn("supervise: task cgroup left behind", zap.String("task", t.id), zap.Error(perr))
			}
		}
		s.wg.Done()
		if mode == here {
			runtime.UnlockOSThread()
		}
		return nil, fmt.Errorf("supervise: starting %s: %w", cmd.Path, err)
	}
	switch mode {
	case monitored:
		t.exit = watchExit(t.pid)
		go s.monitor(ctx, t)
	case unmonitored:
		t.exit = watchExit(t.pid)
		t.monitor = func() { s.monitor(ctx, t) }
	case here:
		if t.exit = watchExitHere(t.pid, &s.wakes); t.exit == nil {
			t.exit = watchExit(t.pid)
		}
		t.monitor = func() {
			s.monitor(ctx, t)
			if restore != nil {
				restore()
			}
			runtime.UnlockOSThread() // the child is reaped
		}
	}
	return t, nil
}

// SetTaskMemoryLimit sets the limit of the tasks' memory cgroup
// (Mechanisms.TaskMemory) to limit bytes, or lifts it when limit is 0 or
// less: for a run whose own limit changed while it ran (the limit it was
// made with follows from the own cgroups', memory.TasksLimit). A limit
// below what the tasks hold makes the kernel reclaim from them and, in
// v2, OOM-kill one of them if it cannot; v1 refuses it (EBUSY) instead.
// ErrNoTaskMemory when there is no such cgroup.
func (s *Supervisor) SetTaskMemoryLimit(limit int64) error {
	if s.mem == nil {
		return ErrNoTaskMemory
	}
	if err := s.mem.setLimit(limit); err != nil {
		return fmt.Errorf("supervise: %w", err)
	}
	return nil
}

// enterTaskMemory moves the new child pid, forked by a thread outside
// the tasks' v1 memory cgroup, into it. A failure leaves the task in
// this process's memory cgroup, governed as before; it is logged once.
func (s *Supervisor) enterTaskMemory(pid int) {
	if err := s.mem.enter(pid); err != nil && s.mem.warned.CompareAndSwap(false, true) {
		s.log.Warn("supervise: a task stays out of the tasks' memory cgroup", zap.Int("pid", pid), zap.Error(err))
	}
}

// raiseOOMScore gives the new child pid the adjustment s.oomAdj. A
// failure costs only the choice of the OOM killer's victim; it is logged
// once.
func (s *Supervisor) raiseOOMScore(pid int) {
	if err := oomscore.Set(pid, s.oomAdj); err != nil && s.oomWarned.CompareAndSwap(false, true) {
		s.log.Warn("supervise: tasks keep this process's OOM score adjustment", zap.Error(err))
	}
}

// startHere starts cmd from the calling thread, which the caller has
// locked, in the tasks' v1 memory cgroup for the fork when there is one,
// and reports whether the child was born there. The main thread never
// enters that cgroup (see lockedOffMain): there a kept fork thread starts
// the child, which a move after the fork would leave with the memory it
// touched before the move charged outside. A thread that cannot leave the
// cgroup again stays locked for good, so that the runtime ends it with
// its goroutine instead of running other goroutines, and starting
// threads, in the cgroup.
func (s *Supervisor) startHere(cmd *exec.Cmd, place *affinity.Placement) (inside bool, restore func(), err error) {
	if s.mem == nil || !s.mem.threadsMove() {
		restore, err = startHere(cmd, place)
		return false, restore, err
	}
	if unix.Gettid() == unix.Getpid() {
		inside, err = s.forker.start(cmd, place)
		return inside, nil, err
	}
	if err := s.mem.enterThread(); err != nil {
		restore, err = startHere(cmd, place)
		return false, restore, err
	}
	restore, err = startHere(cmd, place)
	if lerr := s.mem.leaveThread(); lerr != nil {
		runtime.LockOSThread()
		s.log.Warn("supervise: a thread that started a task stays in the tasks' memory cgroup until its goroutine ends", zap.Error(lerr))
	}
	return err == nil, restore, err
}

// startHere starts cmd from the calling thread, which the caller has
// locked, narrowed to place's CPUs when place is not nil and the thread's
// mask is another set. The thread stays narrowed while the child runs, so
// that the child's exit wakes its monitor on a CPU the child leaves free;
// restore, not nil then, puts the mask back once the monitor is done
// (it is called at once when the start fails).
func startHere(cmd *exec.Cmd, place *affinity.Placement) (restore func(), err error) {
	if place == nil {
		return nil, cmd.Start()
	}
	mask, err := affinity.Allowed()
	if err != nil {
		return nil, fmt.Errorf("supervise: reading the thread's CPU mask: %w", err)
	}
	if mask.Equal(place.CPUs) {
		// The child inherits the placement as it is (a node that is the
		// whole machine, a thread already on the CPU).
		return nil, cmd.Start()
	}
	if err := affinity.PinThread(place.CPUs); err != nil {
		return nil, fmt.Errorf("supervise: placing the child: %w", err)
	}
	err = cmd.Start()
	restore = func() {
		if affinity.PinThread(mask) != nil {
			// A thread that cannot be put back must not serve other
			// goroutines: one more lock keeps it locked after the task's
			// unlock, so the runtime ends it when its goroutine exits.
			runtime.LockOSThread()
		}
	}
	if err != nil {
		restore()
		return nil, err
	}
	return restore, nil
}

// withoutMarker returns env without any MarkerEnv entry (a supervisor that
// is itself some other run's task must not hand its own marker on).
func withoutMarker(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, MarkerEnv+"=") && !strings.HasPrefix(kv, watchdogEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// ID returns the task's marker value, RUNID.N.
func (t *Task) ID() string { return t.id }

// Pid returns the main child's pid, which is also its process group.
func (t *Task) Pid() int { return t.pid }

// Cgroup returns the task's cgroup directory while the task runs: ""
// without the cgroup mechanism, and once the task has ended, when its
// cgroup is removed or kept, empty, for a later task of the run.
func (t *Task) Cgroup() string {
	t.cgMu.Lock()
	defer t.cgMu.Unlock()
	if t.tcg == nil {
		return ""
	}
	return t.tcg.dir
}

// Exited returns a channel closed when the main child has exited; the
// rest of the task may still be running, and is ended next.
func (t *Task) Exited() <-chan struct{} { return t.exited }

// Done returns a channel closed when the task has ended whole: every
// process of it is gone and the main child is reaped.
func (t *Task) Done() <-chan struct{} { return t.done }

// Wait waits for Done and returns the error of the main child's
// exec.Cmd.Wait (nil, or an *exec.ExitError).
func (t *Task) Wait() error {
	<-t.done
	return t.err
}

// Cause returns why the Supervisor ended the task before its main child
// exited by itself: nil when it did, context.Cause of Start's ctx,
// ErrTerminated or ErrKilled. Valid once Done is closed.
func (t *Task) Cause() error {
	<-t.done
	return t.cause
}

// Terminate ends the task: SIGTERM to all of it, SIGKILL after the grace.
// It returns at once; later calls do nothing.
func (t *Task) Terminate() {
	t.once.term.Do(func() {
		close(t.term)
		t.exit.interrupt()
	})
}

// Kill ends the task at once with SIGKILL, also cutting short a grace
// already running (the second interrupt). It returns at once.
func (t *Task) Kill() {
	t.once.kill.Do(func() {
		close(t.kill)
		t.exit.interrupt()
	})
}

// markExited closes exited, once.
func (t *Task) markExited() { t.exitedOnce.Do(func() { close(t.exited) }) }

// hasExited reports whether the main child has exited, asking the kernel
// when no one has noticed yet.
func (t *Task) hasExited() bool {
	select {
	case <-t.exited:
		return true
	default:
	}
	if t.exit != nil && t.exit.exited() {
		t.markExited()
		return true
	}
	return false
}

// monitor is a task's goroutine: it waits for the main child's exit or a
// reason to end the task, ends it (endTask), reaps the main child through
// cmd.Wait, reaps orphans and removes the task's cgroup.
func (s *Supervisor) monitor(ctx context.Context, t *Task) {
	defer s.wg.Done()
	if t.exit != nil {
		// This goroutine waits in Go's poller for the pidfd, until the
		// child exits or ctx, Terminate or Kill interrupts the wait.
		stop := context.AfterFunc(ctx, t.exit.interrupt)
		if t.exit.wait() {
			t.markExited()
		}
		stop()
	} else {
		go func() {
			waitExited(t.pid)
			t.markExited()
		}()
	}
	graceful := true
	select {
	case <-t.exited:
	case <-ctx.Done():
		t.cause = context.Cause(ctx)
	case <-t.term:
		t.cause = ErrTerminated
	case <-t.kill:
		t.cause, graceful = ErrKilled, false
	}
	s.endTask(t, graceful)
	t.exit.close()
	t.err = t.cmd.Wait()
	s.mu.Lock()
	delete(s.direct, t.pid)
	delete(s.live, t)
	s.mu.Unlock()
	if s.mech.Subreaper {
		s.reapSoon()
	}
	t.cgMu.Lock()
	tc := t.tcg
	if tc != nil {
		t.tcg = nil
	}
	t.cgMu.Unlock()
	if tc != nil {
		if err := s.cg.put(tc, 10*time.Second); err != nil {
			s.log.Warn("supervise: task cgroup left behind", zap.String("task", t.id), zap.Error(err))
		}
	}
	close(t.done)
}

// waitExited blocks until process pid has exited, without reaping it
// (WNOWAIT): the zombie keeps its pid, and so its process group's id,
// reserved while endTask signals the group.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// killRounds bounds endTask's SIGKILL rounds: a round signals all that is
// found and waits up to a second for it to go. Only processes stuck in the
// kernel (D state) outlast a round; forks between the scan and the signal
// are caught by the next.
const killRounds = 30

// endTask ends every process of t (doc.go, "Ending a task"). A task whose
// main child exited and left nothing behind costs one sweep. Otherwise,
// when graceful: SIGTERM and SIGCONT (so that a stopped process sees the
// TERM) to the group, the cgroup and the marked processes, then a wait
// until none is left, the grace passes, or Kill; then SIGKILL rounds until
// none is left and the main child has exited.
func (s *Supervisor) endTask(t *Task, graceful bool) {
	if t.tcg != nil && t.hasExited() && !t.tcg.populated() {
		// The cgroup holds every descendant of the main child, its
		// process group's members included, and none is alive.
		return
	}
	if t.tcg == nil && t.hasExited() && s.leftNothing(t) {
		return
	}
	if graceful {
		if s.sweep(t, unix.SIGTERM, unix.SIGCONT) == 0 {
			return
		}
		grace := time.NewTimer(s.grace)
		gone := s.waitGone(t, grace.C, t.kill)
		grace.Stop()
		if gone {
			return
		}
	}
	for range killRounds {
		s.sweep(t, unix.SIGKILL)
		round := time.NewTimer(time.Second)
		gone := s.waitGone(t, round.C, nil)
		round.Stop()
		if gone {
			return
		}
	}
	s.log.Warn("supervise: task processes survive SIGKILL", zap.String("task", t.id), zap.Int("live", s.sweep(t)))
	<-t.exited
}

// leftNothing reports, for a task without a cgroup whose main child has
// exited, that nothing of it is alive, without the /proc scan of a
// sweep. It holds only with Subreaper: a live descendant of the task then
// lies below a process whose parent has died (the main child at the
// least), which the kernel has reparented here, so below an orphan of
// this process; the main child's exit, which this follows, reparents its
// children before it is seen. An orphan is a child of the main thread
// that no exec.Cmd of the Supervisor waits for, other than the watchdog;
// it is this task's when it is in the task's process group or carries
// its marker (a descendant of another task's orphan carries that task's
// marker, as its ancestors do). One read of the main thread's children
// and two files of each live orphan, against two files of every process
// on the machine: a task that leaves nothing behind is not scanned for.
// False when the children cannot be listed, or one of them has exited
// (a zombie not yet reaped, or gone since): its own children, orphans
// now, may be missing from the list.
func (s *Supervisor) leftNothing(t *Task) bool {
	if !s.mech.Subreaper {
		return false
	}
	watchdog := 0
	if s.wd != nil && s.wd.cmd.Process != nil {
		watchdog = s.wd.cmd.Process.Pid
	}
	var buf []byte
	// No reaper pass meanwhile: a child reaped while the list is read
	// can make the kernel skip the one after it.
	s.forkMu.RLock()
	kids, ok := leaderChildren(&buf)
	s.forkMu.RUnlock()
	s.reapWanted()
	if !ok {
		return false
	}
	for _, pid := range kids {
		if pid == watchdog || s.owned(pid) {
			continue
		}
		p, ok := readStatBuf(pid, &buf)
		if !ok || p.dead() {
			// It has exited: its children, reparented here as it did,
			// may have come after the list was read.
			return false
		}
		if p.pgid == t.pid || markedBuf(pid, t.prefix, &buf) {
			return false
		}
	}
	return true
}

// waitGone polls, with a backoff from 1 ms to 50 ms, until nothing of t is
// alive (true) or stop or cut is closed (false).
func (s *Supervisor) waitGone(t *Task, stop <-chan time.Time, cut <-chan struct{}) bool {
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		tick := time.NewTimer(wait)
		select {
		case <-tick.C:
		case <-stop:
			tick.Stop()
			return false
		case <-cut:
			tick.Stop()
			return false
		}
		if s.sweep(t) == 0 {
			return true
		}
	}
}

// sweep sends sigs (none: only count) to every process of t and returns
// how many live ones it found, the main child counted until it exits:
//
//   - the process group, kill(-pgid) (the main child is unreaped, so the
//     id cannot have been recycled);
//   - with a cgroup, its members: cgroup.kill for SIGKILL, each member
//     otherwise, and "populated" for the count. The cgroup holds every
//     descendant (leaving it takes a privileged write to another
//     cgroup.procs), so the marker scan is skipped: it reads two files of
//     every process on the machine (BenchmarkSweep);
//   - without a cgroup, every process carrying t's marker or in t's
//     group, by a /proc scan.
func (s *Supervisor) sweep(t *Task, sigs ...unix.Signal) int {
	live := 0
	if !t.hasExited() {
		live++
	}
	for _, sig := range sigs {
		_ = unix.Kill(-t.pid, sig)
	}
	if tc := t.tcg; tc != nil {
		for _, sig := range sigs {
			if sig == unix.SIGKILL {
				if err := tc.kill(); err != nil {
					s.log.Warn("supervise: cgroup.kill", zap.String("task", t.id), zap.Error(err))
				}
				continue
			}
			for _, pid := range cgroupPids(tc.dir) {
				signalIf(pid, sig, func(pid int) bool { return inCgroup(pid, tc.rel) })
			}
		}
		if tc.populated() {
			live++
		}
		return live
	}
	check := func(pid int) bool { return marked(pid, t.prefix) }
	scanProcs(func(p proc, buf *[]byte) {
		if p.pid == t.pid {
			return // counted above
		}
		inGroup := p.pgid == t.pid
		if inGroup || markedBuf(p.pid, t.prefix, buf) {
			live++
			if !inGroup { // the group had its signals above
				for _, sig := range sigs {
					signalIf(p.pid, sig, check)
				}
			}
		}
	})
	return live
}

// KillAll kills every running task at once (Task.Kill): the CLI's answer
// to a second interrupt.
func (s *Supervisor) KillAll() {
	for _, t := range s.tasks() {
		t.Kill()
	}
}

// tasks returns the tasks not yet done.
func (s *Supervisor) tasks() []*Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := make([]*Task, 0, len(s.live))
	for t := range s.live {
		ts = append(ts, t)
	}
	return ts
}

// StopTasks stops every running task, for the CLI's SIGTSTP: it freezes
// the run's cgroup (cgroup.freeze: atomic, escapees included, invisible
// to the tasks; processes then show state S, not T), or without one sends
// SIGSTOP to each task's group and marked processes (state T). Tasks
// started while stopped start frozen with a cgroup and running without.
func (s *Supervisor) StopTasks() error {
	if s.cg != nil {
		if err := cgroupFreeze(s.cg.dir, true); err != nil {
			return fmt.Errorf("supervise: StopTasks: %w", err)
		}
		return nil
	}
	for _, t := range s.tasks() {
		s.sweep(t, unix.SIGSTOP)
	}
	return nil
}

// ContinueTasks undoes StopTasks: it thaws the run's cgroup, or sends
// SIGCONT to each task's group and marked processes.
func (s *Supervisor) ContinueTasks() error {
	if s.cg != nil {
		if err := cgroupFreeze(s.cg.dir, false); err != nil {
			return fmt.Errorf("supervise: ContinueTasks: %w", err)
		}
		return nil
	}
	for _, t := range s.tasks() {
		s.sweep(t, unix.SIGCONT)
	}
	return nil
}

// Stop stops (true) or continues (false) every process of the task,
// escaped ones included: it freezes or thaws the task's cgroup
// (cgroup.freeze), or without one sends SIGSTOP or SIGCONT to the task's
// group and marked processes, as StopTasks does for all of them. A task
// that has ended is left alone.
func (t *Task) Stop(stop bool) error {
	select {
	case <-t.done:
		return nil
	default:
	}
	t.cgMu.Lock()
	if tc := t.tcg; tc != nil {
		err := cgroupFreeze(tc.dir, stop)
		t.cgMu.Unlock()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("supervise: Stop: %w", err)
		}
		return nil
	}
	ended := t.s.cg != nil // its cgroup was handed back: the task has ended
	t.cgMu.Unlock()
	if ended {
		return nil
	}
	sig := unix.SIGCONT
	if stop {
		sig = unix.SIGSTOP
	}
	t.s.sweep(t, sig)
	return nil
}

// MemoryCurrent returns the memory the task's processes hold (its
// cgroup's memory.current), and false when the task has no cgroup with
// the memory controller.
func (t *Task) MemoryCurrent() (int64, bool) {
	t.cgMu.Lock()
	defer t.cgMu.Unlock()
	if t.tcg == nil {
		return 0, false
	}
	b, err := os.ReadFile(filepath.Join(t.tcg.dir, "memory.current"))
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

// Close ends every task still running (Terminate: SIGTERM, grace,
// SIGKILL), waits until each is done, stops the reaper after a last pass,
// removes the run's cgroup, says bye to the watchdog and waits for it,
// and ends the kept fork threads. Start fails with ErrClosed after it;
// calling it again does nothing.
func (s *Supervisor) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	for _, t := range s.tasks() {
		t.Terminate()
	}
	s.wg.Wait()
	s.wakes.Drain(func(fd int) { unix.Close(fd) })
	if s.quit != nil {
		close(s.quit)
		<-s.reaperDone
		s.reapPass()
	}
	return s.release()
}

// release undoes what New set up, in order, once no task runs: Close's
// end, and New's when the watchdog fails to start.
func (s *Supervisor) release() error {
	var errs []error
	// The kept threads end first: in v1 they are members of the tasks'
	// memory cgroup until the runtime has ended them.
	s.forker.close()
	if s.mem != nil {
		if err := s.mem.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.cg != nil {
		s.cg.closeIdle()
		if err := removeCgroupTree(s.cg.dir, 10*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if s.wd != nil {
		if err := s.wd.bye(); err != nil {
			errs = append(errs, err)
		}
	}
	// Back to this process's own v2 cgroup, the watchdog gone from the
	// leaf.
	if s.mem != nil {
		if err := s.mem.restore(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
