package buildrun

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	goruntime "runtime"
	"slices"
	"sync"
	"time"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/farm/compile"
	"github.com/numasteal/numasteal/internal/oomscore"
	"github.com/numasteal/numasteal/jobserver"
	"github.com/numasteal/numasteal/proc"
	"github.com/numasteal/numasteal/runtime"
	"github.com/numasteal/numasteal/supervise"
)

// Options configure Run. The zero value runs with one slot per worker, stops
// at the first failure, and reports nothing on the way.
type Options struct {
	// Slots is the most CPU slots running tasks hold together (`-j N`).
	// 0 means unlimited admission (`-j 0`): the scheduler hands out every
	// ready task at once, and the process runner still runs only as many
	// as it has slots, one per worker, in the order they were handed out.
	// The tasks handed out wait in a queue of Run's, which passes them to
	// the runner in that order, keeping twice its slots queued there, so a
	// task costs a goroutine and its process state only once its turn is
	// near.
	Slots int
	// MemMB bounds the memory declared by running tasks; 0 means no limit.
	MemMB int
	// KeepGoing runs on after a failure (make -k); only the failed task's
	// dependents are skipped.
	KeepGoing bool
	// Timeout, when positive, kills a task that runs longer; it fails.
	Timeout time.Duration
	// History, when not nil, weights the critical path and receives the
	// duration of every successful task. Saving it is the caller's job.
	History *buildgraph.History
	// Trace, when not nil, receives one span per task that ran, on a slot
	// track (TraceWriter.TaskSpan), its CPU and node in the args.
	Trace *buildgraph.TraceWriter
	// Process configures the runner (pinning, grace period, output limit,
	// subreaper); its Slots is ignored (see Slots above).
	Process proc.Config
	// Progress, when not nil, is called after each task ends and, with
	// ProgressEvery, periodically; never concurrently. Building a Status
	// costs the same at any number of tasks.
	Progress func(Status)
	// ProgressEvery, when positive, is how often Progress is called while
	// nothing ends.
	ProgressEvery time.Duration
	// Started, when not nil, is called with each task as it is passed to
	// the process runner (or the farm), in that order; never concurrently
	// with itself or with Progress. Under Slots 0 the runner may still
	// queue it for a free slot, and with Memory it may wait for memory.
	Started func(*buildgraph.Task)
	// Runner, when not nil, is called with the process runner once Run has
	// made it, before any task starts, so the caller can watch it (its
	// slots in use, for metrics). The runner is closed when Run returns.
	Runner func(*proc.Runner)
	// Environ is the environment tasks start from; nil means os.Environ().
	Environ []string
	// Jobserver, when not nil, is the GNU make jobserver of the run: each
	// task takes its slot from it before its process starts (Process.Admit)
	// and gives it back once the process group is gone, and each child is
	// handed the jobserver (Process.Prepare), so make children share its
	// slots. Under a joined jobserver, Slots 0 admits as many tasks as the
	// jobserver has slots (at least the largest task's), and the tokens
	// bound the run.
	Jobserver *jobserver.Pool
	// Farm, when not nil, sends compiler invocations to a compile farm
	// when the local slots are busy (farm.go); Slots then bounds the local
	// processes and the scheduler hands out the farm's slots on top.
	Farm *FarmOptions
	// KeepOutput keeps every task's captured output until Report.Close.
	// Without it a task's output is released (its memory freed, its spill
	// files closed and removed) as soon as the task has been reported to
	// Progress (or has ended, without Progress), unless the task failed:
	// a failure's output stays for the Report.
	KeepOutput bool
	// Memory, when not nil, admits local tasks by memory and recovers
	// compiles and links from OOM kills (memory.go).
	Memory *MemoryOptions
	// ReleaseSucceeded lets go of a task's process result once the task
	// has succeeded and been reported (to Progress, or has ended, without
	// Progress): its TaskResult in the Report has Proc nil. A run then
	// holds per succeeded task nothing beyond the scheduler's state, which
	// matters at a hundred thousand tasks; Report.User and Sys still sum
	// every process, and a task that did not succeed keeps its Proc.
	// KeepOutput overrides it.
	ReleaseSucceeded bool
}

// Status is a progress report.
type Status struct {
	buildgraph.Progress
	// Elapsed is the time since Run began.
	Elapsed time.Duration
	// ETA estimates the time left, or -1 when there is nothing to go on yet.
	ETA time.Duration
	// Last is the task that just ended, or nil for a periodic report.
	Last *TaskResult
	// Memory is the run's memory now, its OOM kills as of the Governor's
	// last sample; nil without Options.Memory.
	Memory *MemoryStats
}

// TaskResult is one task's fate.
type TaskResult struct {
	buildgraph.Result
	// Proc is how its process ended; nil when it never started (Skipped,
	// NotRun, Canceled before its turn), and in a Report for a task that
	// succeeded under Options.ReleaseSucceeded. In a Report, only a failed
	// task's Stdout and Stderr can still be read, unless
	// Options.KeepOutput.
	Proc *proc.Result
}

// Report is the outcome of a whole run.
type Report struct {
	// Tasks holds every task's result in graph order.
	Tasks []TaskResult
	// Counts tallies the outcomes.
	Counts [buildgraph.NumOutcomes]int
	// Start is when Run began; Elapsed how long it took. User and Sys
	// sum the CPU times of every process (rusage).
	Start     time.Time
	Elapsed   time.Duration
	User, Sys time.Duration
	// Slots is the runner's size: how many processes could run at once.
	Slots int
	// Memory is the run's memory at its end (the counters: freezes, thaws,
	// OOM retries); nil without Options.Memory.
	Memory *MemoryStats

	releaseErrs []error // from releasing outputs during the run
}

// OK reports whether every task succeeded.
func (r *Report) OK() bool { return r.Counts[buildgraph.Succeeded] == len(r.Tasks) }

// Failed returns the tasks that ran and failed, in graph order.
func (r *Report) Failed() []TaskResult {
	var out []TaskResult
	for _, t := range r.Tasks {
		if t.Outcome == buildgraph.Failed {
			out = append(out, t)
		}
	}
	return out
}

// CPUPercent is (User+Sys)/Elapsed in percent, kernbench's "Percent CPU".
func (r *Report) CPUPercent() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return 100 * float64(r.User+r.Sys) / float64(r.Elapsed)
}

// Close releases the output the Report still holds (that of failed tasks,
// or of all with Options.KeepOutput), removing its spill files.
func (r *Report) Close() error {
	errs := r.releaseErrs
	r.releaseErrs = nil
	for _, t := range r.Tasks {
		if t.Proc != nil {
			errs = append(errs, t.Proc.Close())
		}
	}
	return errors.Join(errs...)
}

// Run executes g on rt and returns once every task has its outcome and no
// process of the run is left. The error is not nil only when the run could
// not begin: the graph is invalid or a task can never fit the limits (an
// *buildgraph.Error), or the process runner cannot start. Task failures are
// in the Report. When ctx is canceled, running processes are killed and the
// rest report Canceled.
func Run(ctx context.Context, rt *runtime.Runtime, g *buildgraph.Graph, opts Options) (*Report, error) {
	if opts.Jobserver != nil {
		opts.Process.Admit, opts.Process.Prepare = opts.Jobserver.Admit, opts.Jobserver.Prepare
		if opts.Slots == 0 && opts.Jobserver.Joined() {
			opts.Slots = jobserverSlots(opts.Jobserver.Jobs(), g)
		}
	}
	sched, err := buildgraph.NewScheduler(g, buildgraph.Limits{Slots: opts.Slots + opts.Farm.extraSlots(opts.Slots), MemMB: opts.MemMB, KeepGoing: opts.KeepGoing}, opts.History)
	if err != nil {
		return nil, err
	}
	pcfg := opts.Process
	pcfg.Slots = opts.Slots
	if pcfg.Slots <= 0 {
		pcfg.Slots = rt.Workers()
	}
	// One Supervisor for the local and the farm runner: its reaper reaps
	// the children of this process that it did not start, so two would
	// reap each other's. Its tasks are the OOM killer's choice before
	// this process, and with a memory governor they run in a memory
	// cgroup of their own where one can be made, so that their OOM kills
	// choose among them alone: an OOM-killed compile runs again
	// (memory.go), a killed scheduler ends the build.
	if pcfg.Supervisor == nil {
		sup, err := supervise.New(supervise.Options{Grace: pcfg.Grace, Subreaper: pcfg.Subreaper, OOMScoreAdj: oomscore.Task,
			TaskMemoryLimit: opts.Memory.TaskMemoryLimit()})
		if err != nil {
			return nil, fmt.Errorf("buildrun: %w", err)
		}
		defer sup.Close()
		pcfg.Supervisor = sup
	}
	runner, err := proc.NewRunner(rt, pcfg)
	if err != nil {
		return nil, fmt.Errorf("buildrun: %w", err)
	}
	if opts.Runner != nil {
		opts.Runner(runner)
	}
	environ := opts.Environ
	if environ == nil {
		environ = os.Environ()
	}
	fx, err := newFarmExec(rt, opts, pcfg)
	if err != nil {
		runner.Close()
		return nil, err
	}
	if opts.KeepOutput {
		opts.ReleaseSucceeded = false
	}
	var mem *memGate
	stopGov := func() {}
	if opts.Memory != nil {
		tm := pcfg.Supervisor.Mechanisms().TaskMemory
		if tm.Dir != "" {
			mo := *opts.Memory
			mo.Source = mo.Source.WithTasks(tm)
			opts.Memory = &mo
		}
		mem = newMemGate(opts.Memory, opts.History, opts.Trace)
		if opts.Memory.Watch != nil {
			opts.Memory.Watch(mem.stats)
		}
		gctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { mem.gov.Run(gctx) })
		if opts.Trace != nil {
			wg.Go(func() { mem.traceMemory(gctx, 100*time.Millisecond) })
		}
		if tm.Dir != "" {
			sup, src := pcfg.Supervisor, opts.Memory.Source
			wg.Go(func() { followTasksLimit(gctx, mem.gov, src, sup.SetTaskMemoryLimit, tasksLimitInterval) })
		}
		stopGov = func() { cancel(); wg.Wait() }
	}
	b := &build{
		opts:    opts,
		sched:   sched,
		runner:  runner,
		start:   time.Now(),
		farm:    fx,
		mem:     mem,
		environ: environ,
	}
	if opts.ReleaseSucceeded {
		b.procs = make(map[*buildgraph.Task]*proc.Result)
	} else {
		b.procs = make(map[*buildgraph.Task]*proc.Result, len(g.Tasks))
	}
	if opts.Slots <= 0 {
		b.window = 2 * pcfg.Slots
	}
	b.report.Start, b.report.Slots = b.start, pcfg.Slots

	stopTicker := b.tick()
	// The ready tasks are handed out here first, and then by the goroutine
	// of each task that ends, as it ends (next): only an ending task makes
	// others ready or gives back the slots and memory they wait for. So a
	// task's goroutine goes on to run the next task itself, and no other
	// goroutine is woken between a task's end and its successor's fork.
	// Once no task runs, nothing is left to hand out.
	var wg sync.WaitGroup
	stopCancel := context.AfterFunc(ctx, sched.Cancel)
	b.handOut(ctx, &wg, false)
	wg.Wait()
	stopCancel()
	runner.Close()
	fx.close()
	stopTicker()
	stopGov()
	if mem != nil {
		st := mem.stats()
		b.report.Memory = &st
	}

	b.report.Elapsed = time.Since(b.start)
	// Task by task rather than through sched.Results, so that the
	// results are not held twice.
	b.report.Tasks = make([]TaskResult, len(g.Tasks))
	for i, t := range g.Tasks {
		r := sched.Result(t)
		b.report.Tasks[i] = TaskResult{Result: r, Proc: b.procs[t]}
		b.report.Counts[r.Outcome]++
	}
	return &b.report, nil
}

// jobserverSlots is the process runner's size for Slots 0 under a joined
// jobserver of jobs slots (0: unknown): enough that only the tokens limit
// the run, and at least the largest task's slots (the scheduler rejects
// bigger tasks).
func jobserverSlots(jobs int, g *buildgraph.Graph) int {
	n := jobs
	if n <= 0 {
		n = len(g.Tasks)
	}
	for _, t := range g.Tasks {
		n = max(n, t.Slots())
	}
	return min(max(n, 1), jobserver.MaxSlots)
}

// build is the state of one Run.
type build struct {
	opts    Options
	sched   *buildgraph.Scheduler
	runner  *proc.Runner
	start   time.Time
	farm    *farmExec // nil without a farm
	mem     *memGate  // nil without Options.Memory
	environ []string
	// window bounds the tasks passed to the runner and not yet finished;
	// 0 means no bound (the scheduler's slots bound them).
	window int

	handMu   sync.Mutex         // serialises handOut, so tasks reach the runner in scheduling order
	admitMu  sync.Mutex         // guards queued and inRunner
	queued   []*buildgraph.Task // handed out, waiting for the window; FIFO
	inRunner int

	mu        sync.Mutex                        // guards the fields below and serialises Progress
	procs     map[*buildgraph.Task]*proc.Result // none of succeeded tasks under ReleaseSucceeded
	report    Report
	doneWall  time.Duration // summed wall time of finished tasks, for the ETA
	doneTasks int
}

// handOut passes every task the scheduler has ready on (admit), in
// scheduling order. With keep, the first one that is a local task
// launched at once is not given a goroutine: it is returned, queued, for
// the calling goroutine to run next (nil when there is none). When ctx is
// done it cancels the schedule instead.
func (b *build) handOut(ctx context.Context, wg *sync.WaitGroup, keep bool) (kept *local) {
	b.handMu.Lock()
	defer b.handMu.Unlock()
	for {
		if ctx.Err() != nil {
			b.sched.Cancel()
			return kept
		}
		t, ok := b.sched.Next()
		if !ok {
			return kept
		}
		if l := b.admit(ctx, t, wg, keep && kept == nil); l != nil {
			kept = l
		}
	}
}

// admit passes t, just handed out by the scheduler, to the runner, or
// queues it behind the others while the window is full. Tasks reach the
// runner in the order they were handed out either way. With keep, it
// returns t, queued, as launch does.
func (b *build) admit(ctx context.Context, t *buildgraph.Task, wg *sync.WaitGroup, keep bool) *local {
	b.admitMu.Lock()
	if b.window > 0 && (b.inRunner >= b.window || len(b.queued) > 0) {
		b.queued = append(b.queued, t)
		b.admitMu.Unlock()
		return nil
	}
	b.inRunner++
	b.admitMu.Unlock()
	return b.launch(ctx, t, wg, keep)
}

// local is a local task queued to run in a task's goroutine: on the
// runner (q), or, with Options.Memory, in the memory gate's line (w).
type local struct {
	t    *buildgraph.Task
	q    *proc.Queued
	cmd  proc.Command
	kind compile.Kind
	w    *memWaiter
}

// launch starts t on the runner (or the farm) in a goroutine counted in
// wg, which reports it and then goes on with what its end allows (chain).
// A local task is queued now (on the runner, or the memory gate); with
// keep, it gets no goroutine of its own: launch returns it for the
// caller, a task's goroutine, to run next. Otherwise it returns nil.
func (b *build) launch(ctx context.Context, t *buildgraph.Task, wg *sync.WaitGroup, keep bool) *local {
	if b.opts.Started != nil {
		b.mu.Lock()
		b.opts.Started(t)
		b.mu.Unlock()
	}
	cmd := command(t, b.environ, b.opts.Timeout)
	if b.farm != nil && b.farm.try(ctx, b, t, cmd, wg) {
		return nil
	}
	l := &local{t: t}
	if b.mem == nil {
		l.q = b.runner.Queue(ctx, cmd)
	} else {
		l.cmd = cmd
		l.kind, l.w = b.queueLocal(t, cmd)
	}
	if keep {
		return l
	}
	wg.Add(1)
	go b.chain(ctx, l, wg)
	return nil
}

// chainYield is how often a chain goroutine passes through Go's
// scheduler between tasks. A chain of short tasks runs for good without
// ever parking (its waits are system calls), and after 10 ms on one
// scheduler tick Go's sysmon preempts it: a signal, the P taken from a
// thread in poll(2) or fork, the goroutine handed between threads when
// it is locked for a fork (supervise.StartHere), and sysmon polling every
// 20 µs for a millisecond after. A yield before that costs one wake-up
// of an idle thread.
const chainYield = 5 * time.Millisecond

// chain is the goroutine of local tasks: it runs l, reports it, and runs
// the next task its end hands out, until there is none. The caller has
// counted it in wg.
func (b *build) chain(ctx context.Context, l *local, wg *sync.WaitGroup) {
	defer wg.Done()
	yielded := time.Now()
	for l != nil {
		if now := time.Now(); now.Sub(yielded) >= chainYield {
			// Between tasks, where its thread is not locked: see
			// chainYield.
			goruntime.Gosched()
			yielded = now
		}
		var res *proc.Result
		var peak int64
		if l.q != nil {
			res = l.q.Run()
			peak = res.MaxRSS
		} else {
			res, peak = b.runLocal(ctx, l.t, l.cmd, l.kind, l.w)
		}
		b.finish(l.t, res, peak)
		l = b.next(ctx, wg, true)
	}
}

// next passes on what the end of a task allows, once it is reported: the
// first task queued for the window, then every task the scheduler has
// ready. With keep, the first local task among them is returned to the
// caller to run, as handOut does. The caller is counted in wg.
func (b *build) next(ctx context.Context, wg *sync.WaitGroup, keep bool) *local {
	l := b.launchNext(ctx, wg, keep)
	if l2 := b.handOut(ctx, wg, keep && l == nil); l == nil {
		return l2
	}
	return l
}

// launchNext passes the first queued task to the runner, once a task that
// was there has finished, and returns it as launch does with keep. The
// caller is counted in wg.
func (b *build) launchNext(ctx context.Context, wg *sync.WaitGroup, keep bool) *local {
	if b.window == 0 {
		return nil
	}
	b.admitMu.Lock()
	b.inRunner--
	if len(b.queued) == 0 {
		b.admitMu.Unlock()
		return nil
	}
	t := b.queued[0]
	b.queued[0] = nil
	b.queued = b.queued[1:]
	b.inRunner++
	b.admitMu.Unlock()
	return b.launch(ctx, t, wg, keep)
}

// finish records a task's process result, and the most it held in
// bytes when known (else 0), and reports it to the scheduler.
func (b *build) finish(t *buildgraph.Task, res *proc.Result, peak int64) {
	var o buildgraph.Outcome
	switch res.Outcome {
	case proc.Succeeded:
		o = buildgraph.Succeeded
		if b.opts.History != nil {
			b.opts.History.Record(t, res.Wall)
			b.opts.History.RecordPeak(t, peak)
		}
	case proc.Canceled:
		o = buildgraph.Canceled
	default:
		o = buildgraph.Failed
	}
	if b.opts.Trace != nil && res.Pid > 0 && !b.farm.ranRemote(res) {
		r := buildgraph.Result{Task: t, Outcome: o, Start: res.Start, End: res.End}
		extra := map[string]any{"pid": res.Pid, "cpu": res.CPU, "node": res.Node, "user_ms": res.User.Milliseconds(), "sys_ms": res.Sys.Milliseconds()}
		if res.Signal != 0 {
			extra["signal"] = res.Signal.String()
		} else {
			extra["exit"] = res.ExitCode
		}
		b.opts.Trace.TaskSpan(r, extra)
	}
	b.mu.Lock()
	if o != buildgraph.Succeeded || !b.opts.ReleaseSucceeded {
		b.procs[t] = res
	}
	b.report.User += res.User
	b.report.Sys += res.Sys
	if res.Pid > 0 {
		b.doneWall += res.Wall
		b.doneTasks++
	}

	// Complete, report, then release the output in one critical section:
	// a dependent that Complete makes ready is Started only after this
	// report, and the output is gone before the next task's report.
	defer b.mu.Unlock()
	b.sched.Complete(t, o)
	if b.opts.Progress != nil {
		tr := TaskResult{Result: b.sched.Result(t), Proc: res}
		b.opts.Progress(b.statusLocked(&tr))
	}
	if o != buildgraph.Failed && !b.opts.KeepOutput {
		// Reported: nothing reads it again.
		if err := res.Close(); err != nil {
			b.report.releaseErrs = append(b.report.releaseErrs, err)
		}
	}
}

// tick calls Progress every ProgressEvery until the returned stop is
// called.
func (b *build) tick() (stop func()) {
	if b.opts.Progress == nil || b.opts.ProgressEvery <= 0 {
		return func() {}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(b.opts.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				b.mu.Lock()
				b.opts.Progress(b.statusLocked(nil))
				b.mu.Unlock()
			}
		}
	}()
	return func() { close(quit); <-done }
}

// statusLocked builds a Status. b.mu must be held.
func (b *build) statusLocked(last *TaskResult) Status {
	p := b.sched.Progress()
	s := Status{Progress: p, Elapsed: time.Since(b.start), ETA: -1, Last: last}
	if b.mem != nil {
		st := b.mem.status()
		s.Memory = &st
	}
	slots := int64(max(b.runner.Slots(), 1))
	left := max(p.PathLeft, p.WorkLeft/slots) // ms when Timed, else tasks
	switch {
	case p.Finished() == p.Total:
		s.ETA = 0
	case p.Timed:
		s.ETA = time.Duration(left) * time.Millisecond
	case b.doneTasks > 0:
		s.ETA = time.Duration(left) * (b.doneWall / time.Duration(b.doneTasks))
	}
	return s
}

// command turns a task into the runner's Command.
func command(t *buildgraph.Task, environ []string, timeout time.Duration) proc.Command {
	args := t.Cmd
	if args == nil {
		// The program is looked up in numasteal's PATH, so a task that
		// sets its own keeps the shell, which looks it up in that one.
		if words, ok := directArgv(t.Shell); ok && !hasKey(t.Env, "PATH") {
			args = words
		} else {
			args = []string{"/bin/sh", "-c", t.Shell}
		}
	}
	env := environ
	if len(t.Env) > 0 {
		env = slices.Clone(environ)
		for _, k := range slices.Sorted(maps.Keys(t.Env)) {
			env = append(env, k+"="+t.Env[k]) // exec keeps the last of duplicates
		}
	}
	return proc.Command{Args: args, Dir: t.Cwd, Env: env, Slots: t.Slots(), Timeout: timeout}
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}
