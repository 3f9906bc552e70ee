package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/runtime"
	"github.com/numasteal/numasteal/supervise"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// PinMode says what affinity a process task's child starts with.
type PinMode uint8

const (
	// PinCPU confines the child (and its children) to the one CPU chosen at
	// fork time, when the runner's processes fill that CPU's node: the
	// child has its CPU to itself among them, and every other CPU of the
	// node runs one (or a Go task of the runtime). Otherwise it is
	// confined to the node, as PinNode: a child placed on a CPU that
	// already runs one (the runner has more slots than the placement could
	// find idle CPUs) could not leave it for a CPU that idles (the kernel
	// cannot balance a process pinned to one CPU; docs/BENCHMARKS.md,
	// kernbench at -j 16×CPUs); and while the node has a CPU free of the
	// runner's work, a task of several processes (a shell pipeline, a
	// compiler driver with its passes, a threaded link, a sub-build) uses
	// it as the kernel's fork balancing would, and the child's start runs
	// beside its parent's last steps of the fork instead of after them.
	PinCPU PinMode = iota
	// PinNode confines it to the usable CPUs of that CPU's NUMA node, so
	// the kernel may still balance it inside the node.
	PinNode
	// PinNone leaves the child with this process's affinity. It is implied
	// when the runtime's workers are not pinned (Runtime.Pinned is false:
	// runtime.Config.NoPin, a virtual topology).
	PinNone
)

// String returns "cpu", "node" or "none".
func (m PinMode) String() string {
	switch m {
	case PinCPU:
		return "cpu"
	case PinNode:
		return "node"
	case PinNone:
		return "none"
	}
	return fmt.Sprintf("PinMode(%d)", uint8(m))
}

// ParsePinMode is the inverse of PinMode.String, for a --pin flag.
func ParsePinMode(s string) (PinMode, error) {
	for _, m := range []PinMode{PinCPU, PinNode, PinNone} {
		if m.String() == s {
			return m, nil
		}
	}
	return PinCPU, fmt.Errorf("proc: unknown pin mode %q (want cpu, node or none)", s)
}

// Config configures a Runner. The zero value is valid.
type Config struct {
	// Slots is how many slots running processes hold together at most; 0
	// means one per worker.
	Slots int
	// Pin is the affinity children start with.
	Pin PinMode
	// Grace is how long a canceled or timed-out command has between SIGTERM
	// and SIGKILL; 0 means 2 seconds.
	Grace time.Duration
	// OutputLimit is how many bytes of each stream stay in memory before
	// spilling to a file; 0 means DefaultOutputLimit.
	OutputLimit int
	// SpillDir is where spill files go; "" means os.TempDir().
	SpillDir string
	// Subreaper makes this process a child subreaper (prctl
	// PR_SET_CHILD_SUBREAPER) when the runner is created, so that the
	// grandchildren a command leaves behind are reparented here and reaped
	// by the runner rather than by init. It changes the whole process (any
	// orphan of any child comes here), so only a program that runs all its
	// children through runners, like `numasteal run`, should set it. It
	// applies to the runner's own Supervisor (Supervisor nil). Where the
	// Supervisor has no cgroup per task (supervise.Mechanisms says why),
	// it is also what spares the end of every task a scan of /proc for
	// what the task left behind, a scan that grows with the processes on
	// the machine (supervise's doc, "Ending a task").
	Subreaper bool
	// Supervisor, when not nil, starts and ends every process of the
	// runner (package supervise: process groups, the environment marker,
	// a cgroup per task where cgroup v2 allows, the reaper, Pdeathsig, and
	// the watchdog when its Options ask for one). The caller owns it: it
	// may share it between runners, answer signals through it (KillAll,
	// StopTasks) and closes it after the runners. nil means the runner
	// makes its own, with Grace and Subreaper, and closes it in Close.
	Supervisor *supervise.Supervisor

	// Admit, when not nil, is a further admission gate, passed after the
	// runner's own slots and before the fork: a GNU make jobserver token,
	// say. release is called once the task's process group is gone. An
	// error ends the task without running it: Canceled when ctx is done,
	// else Failed with that error.
	Admit func(ctx context.Context) (release func(), err error)
	// Prepare, when not nil, is called with each command's exec.Cmd on the
	// forking worker just before the fork, to add descriptors (ExtraFiles)
	// or environment (MAKEFLAGS). An error fails the task unstarted.
	Prepare func(c *exec.Cmd) error
	// Reaped, when not nil, is called with each command that was started,
	// after it and its group are reaped and before its slots are released
	// (a jobserver counts its lost tokens back here).
	Reaped func(c *exec.Cmd)
}

// Command is an external command to run as a task.
type Command struct {
	// Args is the argv; Args[0] is looked up in PATH unless it contains a
	// slash (a relative path is relative to Dir).
	Args []string
	// Dir is the working directory; "" means the caller's.
	Dir string
	// Env is the environment; nil means the caller's.
	Env []string
	// Slots is how many slots the process holds while it runs; 0 means 1.
	// A request above the runner's size is clamped to it.
	Slots int
	// Timeout, when positive, kills the command (SIGTERM, then SIGKILL)
	// once it has run that long; the result then has TimedOut set.
	Timeout time.Duration
	// Started, when not nil, is called with the command's supervised task
	// once it has forked, before the runner waits for it: the caller may
	// watch its processes (their memory) or stop and continue them
	// (supervise.Task.Stop) while it runs. It is not called for a command
	// that never started.
	Started func(*supervise.Task)
}

// ErrTimeout is the cause of a process task killed by Command.Timeout.
var ErrTimeout = errors.New("proc: process timed out")

// Runner runs external commands as tasks of a runtime.Runtime. It is safe
// for concurrent use. Close it before closing the Runtime.
type Runner struct {
	rt    *runtime.Runtime
	cfg   Config
	slots *slotSem
	pin   PinMode

	sup    *supervise.Supervisor
	ownSup bool // sup was made by NewRunner: Close closes it
	bufs   copyBufs
	caps   captures // the files children write their output to
	// devNull is every child's stdin, opened once; nil if it could not
	// be (exec.Cmd then opens one per child).
	devNull *os.File
	// paths caches PATH lookups: program name -> absolute path. A name
	// is looked up once per runner, as this process's PATH says.
	paths sync.Map

	// running counts the processes running on each CPU, for the
	// placement; index = CPU id. goLoad is the runtime's Load.
	running []atomic.Int32
	goLoad  balance.Load

	ctx    context.Context // canceled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // one per Start until its result is delivered

	mu     sync.Mutex // orders Start's wg.Add before Close's wg.Wait
	closed bool       // guarded by mu
}

// NewRunner returns a runner whose fork tasks run on rt's workers.
// It fails only when cfg.Subreaper is set and the prctl fails.
func NewRunner(rt *runtime.Runtime, cfg Config) (*Runner, error) {
	if cfg.Slots <= 0 {
		cfg.Slots = rt.Workers()
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 2 * time.Second
	}
	if cfg.OutputLimit <= 0 {
		cfg.OutputLimit = DefaultOutputLimit
	}
	sup, own := cfg.Supervisor, false
	if sup == nil {
		var err error
		sup, err = supervise.New(supervise.Options{Grace: cfg.Grace, Subreaper: cfg.Subreaper})
		if err != nil {
			return nil, fmt.Errorf("proc: %w", err)
		}
		own = true
	}
	pin := cfg.Pin
	if !rt.Pinned() {
		pin = PinNone
	}
	r := &Runner{
		rt:      rt,
		cfg:     cfg,
		slots:   newSlotSem(cfg.Slots),
		pin:     pin,
		running: make([]atomic.Int32, rt.Topology().Usable.Last()+1),
		goLoad:  rt.Load(),
		sup:     sup,
		ownSup:  own,
		caps:    captures{dir: cfg.SpillDir},
	}
	if f, err := os.Open(os.DevNull); err == nil {
		r.devNull = f
	}
	// Close cancels r.ctx; so does the runtime's closing with Cancel, which
	// ends its processes too.
	r.ctx, r.cancel = context.WithCancel(rt.Context())
	return r, nil
}

// Slots returns the runner's number of slots.
func (r *Runner) Slots() int { return r.cfg.Slots }

// SlotsUsed returns the slots held by running processes now (and by those
// about to fork).
func (r *Runner) SlotsUsed() int { return r.slots.used() }

// Process is a process task started by Runner.Start.
type Process struct {
	done   chan struct{}
	result *Result
	pid    atomic.Int64 // 0 until the command has started
}

// Pid returns the command's process id once it has started, else -1. The
// process group has the same id.
func (p *Process) Pid() int {
	if pid := p.pid.Load(); pid > 0 {
		return int(pid)
	}
	return -1
}

// Done returns a channel closed when the result is ready.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait blocks until the task has ended — the command exited or was
// killed, its process group is gone and its slots are free, or it never
// started — and returns its result.
func (p *Process) Wait() *Result {
	<-p.done
	return p.result
}

// Start queues cmd for its slots now (so calls start in call order), and
// returns at once; the command forks once its slots are free. When ctx is
// done first, or the runner or the runtime closes, the task reports
// Canceled without running; when ctx is done while it runs, its
// process group is killed and it reports Canceled.
func (r *Runner) Start(ctx context.Context, cmd Command) *Process {
	p, n, w := r.begin(ctx, cmd)
	if w != nil {
		go r.run(ctx, cmd, n, w, p)
	}
	return p
}

// Run is Start followed by Wait, with the task's life in the calling
// goroutine.
func (r *Runner) Run(ctx context.Context, cmd Command) *Result {
	return r.Queue(ctx, cmd).Run()
}

// Queued is a process task queued for its slots by Queue, whose life
// runs in the goroutine that calls its Run.
type Queued struct {
	r   *Runner
	ctx context.Context
	cmd Command
	n   int
	w   *slotWaiter // nil when the runner was closed
	p   *Process
}

// Queue queues cmd for its slots now, as Start does (calls start in call
// order), and returns the task without running it: Run runs its life in
// the calling goroutine, which a caller that has a goroutine for the task
// anyway (and reports the result there) spares the one Start makes. Run
// must be called exactly once; until then the task holds its place in the
// queue, and Close waits for it.
func (r *Runner) Queue(ctx context.Context, cmd Command) *Queued {
	p, n, w := r.begin(ctx, cmd)
	return &Queued{r: r, ctx: ctx, cmd: cmd, n: n, w: w, p: p}
}

// Run waits for the task's slots, forks it and waits for it, all in the
// calling goroutine, and returns its result.
func (q *Queued) Run() *Result {
	if q.w != nil {
		q.r.run(q.ctx, q.cmd, q.n, q.w, q.p)
	}
	return q.p.result
}

// begin makes the task's Process and queues it for n slots (w); w is nil
// when the runner is closed, and the Process is done then.
func (r *Runner) begin(ctx context.Context, cmd Command) (p *Process, n int, w *slotWaiter) {
	p = &Process{done: make(chan struct{})}
	res := &Result{
		Args: cmd.Args, CPU: -1, Pid: -1, ExitCode: -1,
		Stdout: newOutput(r.cfg.OutputLimit, r.cfg.SpillDir, r.sup.TempPath, &r.bufs),
		Stderr: newOutput(r.cfg.OutputLimit, r.cfg.SpillDir, r.sup.TempPath, &r.bufs),
	}
	p.result = res
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		res.Outcome, res.Err = Canceled, runtime.ErrClosed
		res.Stdout.seal()
		res.Stderr.seal()
		close(p.done)
		return p, 0, nil
	}
	r.wg.Add(1)
	r.mu.Unlock()
	n = r.slots.clamp(cmd.Slots)
	return p, n, r.slots.enqueue(n)
}

// Close kills every running process group (SIGTERM, then SIGKILL after
// Grace), makes queued and later Starts report Canceled with
// runtime.ErrClosed, and returns once every result has been delivered.
// Calling it again does nothing.
func (r *Runner) Close() error {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
	r.caps.close()
	if r.devNull != nil {
		r.devNull.Close()
		r.devNull = nil
	}
	if r.ownSup {
		return r.sup.Close()
	}
	return nil
}

// handOverYield is how old the scheduling slice that comes with a task's
// slots may be before the task yields (runtime.Gosched) ahead of its
// fork. A release wakes the first waiter onto the releasing goroutine's P
// as the next goroutine it runs, and such a goroutine runs on what is left
// of the time slice of the one before it (Go's runnext). A chain of tasks,
// each granted by the one before, so runs on one slice however many tasks
// it holds; once that slice is 10 ms old Go's sysmon takes the P from the
// thread that sleeps in poll(2) for its child (supervise.StartHere) and
// polls every 20 µs for a millisecond or more after. A yield starts a new
// slice; it costs the wake-up of an idle thread. A task whose own wait is
// longer than 10 ms loses its P to sysmon regardless.
const handOverYield = 4 * time.Millisecond

// run is the goroutine of one process task: admission, fork, wait.
func (r *Runner) run(ctx context.Context, cmd Command, n int, w *slotWaiter, p *Process) {
	defer r.wg.Done()
	defer close(p.done)
	res := p.result
	defer res.Stderr.seal()
	defer res.Stdout.seal()

	// The task's context: the caller's, canceled also by Close and by the
	// runtime closing with Cancel (r.ctx derives from Runtime.Context).
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(r.ctx, func() { cancel(runtime.ErrClosed) })
	defer stop()

	if err := r.slots.wait(tctx, w); err != nil {
		res.Outcome, res.Err = Canceled, context.Cause(tctx)
		if r.ctx.Err() != nil {
			res.Err = runtime.ErrClosed
		}
		return
	}
	slice := w.slice
	if now := time.Now(); slice.IsZero() {
		slice = now
	} else if now.Sub(slice) >= handOverYield {
		// Before the fork, where this goroutine's thread is not locked:
		// see handOverYield.
		goruntime.Gosched()
		slice = time.Now()
	}
	defer r.slots.release(n, slice)
	// A slot freed by Close killing a running process must not start a
	// queued one: Close cancels r.ctx before it kills anything, but the
	// AfterFunc above cancels tctx from another goroutine, possibly later.
	if r.ctx.Err() != nil {
		res.Outcome, res.Err = Canceled, runtime.ErrClosed
		return
	}
	if r.cfg.Admit != nil {
		release, err := r.cfg.Admit(tctx)
		if err != nil {
			res.Outcome, res.Err = Failed, err
			if tctx.Err() != nil {
				res.Outcome, res.Err = Canceled, context.Cause(tctx)
			}
			return
		}
		defer release()
	}

	// The process's context: tctx and its timeout; the Supervisor ends the
	// task when it is done, with its cause.
	pctx, pcancel := tctx, context.CancelFunc(func() {})
	if cmd.Timeout > 0 {
		pctx, pcancel = context.WithTimeoutCause(tctx, cmd.Timeout, ErrTimeout)
	}
	defer pcancel()

	// The child writes its output to files of the runner's, drained into
	// res once every process of the task is gone; where none can be made,
	// exec.Cmd copies pipes into res as the child writes.
	capt, cerr := r.caps.get()
	if cerr == nil {
		capt.attach(res.Stdout, res.Stderr)
		defer r.caps.drain(capt, res.Stdout, res.Stderr)
	}

	// The fork: in this goroutine, from its own thread, which then waits
	// for the child (supervise.StartHere), so that no other goroutine or
	// thread is woken between the decision and the reap.
	if tctx.Err() != nil {
		res.Outcome, res.Err = Canceled, context.Cause(tctx)
		return
	}
	cpu := r.pickCPU()
	// Counted now, so the next pick sees it.
	shared := r.running[cpu].Add(1) > 1
	c := r.command(cmd, res, capt)
	start := time.Now()
	var st *supervise.Task
	if r.cfg.Prepare != nil {
		if err := r.cfg.Prepare(c); err != nil {
			res.Err = fmt.Errorf("proc: preparing %s: %w", commandName(cmd.Args), err)
		}
	}
	if res.Err == nil {
		st, res.Err = r.fork(pctx, c, cpu, shared, res)
	}
	defer r.running[cpu].Add(-1)
	if res.Err != nil {
		// The program could not be started: the task's failure.
		res.Outcome = Failed
		res.Start, res.End = start, time.Now()
		return
	}
	res.Pid = st.Pid()
	p.pid.Store(int64(res.Pid))
	res.Start = start
	if cmd.Started != nil {
		cmd.Started(st)
	}
	st.Monitor()      // this goroutine is the task's monitor
	werr := st.Wait() // every process of the task is gone and reaped
	res.End = time.Now()
	res.fill(c, werr, st.Cause())
	if r.cfg.Reaped != nil {
		r.cfg.Reaped(c)
	}
}

// command builds the exec.Cmd for cmd, writing into capt's files, or
// into res's outputs when capt is nil.
func (r *Runner) command(cmd Command, res *Result, capt *capture) *exec.Cmd {
	var c *exec.Cmd
	switch {
	case len(cmd.Args) == 0:
		c = &exec.Cmd{Err: errors.New("proc: empty command")}
	default:
		name := cmd.Args[0]
		if p, ok := r.paths.Load(name); ok {
			c = &exec.Cmd{Path: p.(string), Args: cmd.Args}
			break
		}
		c = exec.Command(name, cmd.Args[1:]...)
		if c.Err == nil && filepath.Base(name) == name && filepath.IsAbs(c.Path) {
			r.paths.Store(name, c.Path)
		}
	}
	c.Dir, c.Env = cmd.Dir, cmd.Env
	if r.devNull != nil {
		c.Stdin = r.devNull
	}
	if capt != nil {
		c.Stdout, c.Stderr = capt.out, capt.err
	} else {
		c.Stdout, c.Stderr = res.Stdout, res.Stderr
	}
	// The output pipes close when the task's processes are killed; this
	// only bounds Wait if one that escaped every mechanism kept a pipe open.
	c.WaitDelay = r.cfg.Grace
	return c
}

// spareInNode reports whether a usable CPU of node other than cpu runs
// none of the runner's processes and no Go task.
func (r *Runner) spareInNode(node, cpu int) bool {
	n, ok := r.rt.Topology().Node(node)
	if !ok {
		return false
	}
	load := (*processLoad)(r)
	for c := range n.Usable.All() {
		if c != cpu && !load.Running(c) {
			return true
		}
	}
	return false
}

// fork starts c as a task of the Supervisor, on CPU cpu (or its node);
// shared says that the CPU already runs another of the runner's processes,
// which turns PinCPU into the node's CPUs. The child is confined from its
// first instruction: the calling goroutine's thread is narrowed to the set
// for the fork (supervise.StartHere), and the caller must then call the
// task's Monitor. The task ends when ctx is done.
func (r *Runner) fork(ctx context.Context, c *exec.Cmd, cpu int, shared bool, res *Result) (*supervise.Task, error) {
	topo := r.rt.Topology()
	node := topo.NodeOf(cpu)
	res.CPU, res.Node = cpu, node
	pin := r.pin
	if pin == PinCPU && (shared || r.spareInNode(node, cpu)) {
		pin = PinNode
	}
	var set cpuset.Set
	switch pin {
	case PinCPU:
		set = cpuset.Of(cpu)
	case PinNode:
		if n, ok := topo.Node(node); ok && !n.Usable.IsEmpty() {
			set = n.Usable
		} else {
			set = cpuset.Of(cpu)
		}
	case PinNone:
		return r.sup.StartHere(ctx, c, nil)
	}
	res.Affinity = set
	return r.sup.StartHere(ctx, c, &affinity.Placement{CPUs: set})
}
