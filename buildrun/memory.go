package buildrun

import (
	"context"
	"fmt"
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/farm/compile"
	"github.com/numasteal/numasteal/memory"
	"github.com/numasteal/numasteal/proc"
	"github.com/numasteal/numasteal/supervise"
)

// The memory of a run: with Options.Memory, each local task starts only
// when a memory.Governor admits its need, is watched while it runs (its
// memory, frozen and thawed as the Governor's policy says), and, when the
// kernel's OOM killer ends a compile or a link, runs again.
//
// A task's need is, in order: its declared MemMB; its peak in the History
// (the last successful run's); the most a task of its kind (compile,
// link, other: compile.Classify) held at their peaks in this run (the
// ninth decile of the last finished, memory.Prior), raised to what one
// still running holds, once one of the kind has finished; else a first guess
// (firstGuess), raised to what the running tasks of its kind hold now;
// a need taken from the run's tasks is taken again when the task comes to
// the front of the line. Tasks wait for admission in the order the
// scheduler handed them out.
//
// A task killed by SIGKILL while the OOM-kill count rose (and not by
// numasteal: not canceled, not timed out) is an OOM kill. A compile or a
// link runs again, at most maxOOMRetries times: first with a need of half
// again the most it held, then alone; one that was OOM-killed while it
// ran alone fails, with the message of an *OOMError, unless it held less
// than half the limit (without one, half the memory available at its
// end): then the memory went to another program and the task, which
// fits, runs again too. Other commands are not run again (their rerun may
// not be safe) and fail with that message.
//
// Where the Supervisor has a memory cgroup of the tasks' own, the run
// sets its limit to memory.TasksLimit again whenever the own cgroups'
// limit changes (followTasksLimit, from the Governor's samples).

// MemoryOptions turn on the memory governor of a run.
type MemoryOptions struct {
	// Source reads the machine's and the cgroups' memory (memory.Open).
	Source *memory.Source
	// Thresholds are the Governor's; Budget is the run's --mem in bytes.
	Thresholds memory.Thresholds
	// Interval is the Governor's sampling interval; 0: its default.
	Interval time.Duration
	// Watch, when not nil, is called before any task starts with a
	// function that returns the run's memory now (safe for concurrent
	// use, at any time), for metrics.
	Watch func(stats func() MemoryStats)
}

// TaskMemoryLimit returns the limit of a memory cgroup for the run's
// tasks alone (supervise's Options.TaskMemoryLimit; memory.TasksLimit),
// so that their OOM kills never take numasteal; 0 when o is nil, no
// cgroup limit is set or the memory cannot be read. A run whose
// Supervisor has such a cgroup counts its limit with the others.
func (o *MemoryOptions) TaskMemoryLimit() int64 {
	if o == nil {
		return 0
	}
	l, err := o.Source.TasksLimit()
	if err != nil {
		return 0
	}
	return l
}

// followTasksLimit keeps the limit of the tasks' memory cgroup following
// the own cgroups' limit (Sample.OwnLimit of the Governor's last sample,
// looked at every interval until ctx is done): when that limit is
// lowered or raised while the run goes on (systemctl set-property, a
// container's update), the tasks' is set to src.TasksLimit again, so that
// their OOM kills still choose among them alone. Only a change of the own
// limit moves it, not this process's resident memory, which TasksLimit's
// margin also follows: a tasks' limit lowered under a compile that fitted
// because numasteal grew would kill the compile for numasteal's sake. A
// limit the kernel refuses (v1 cannot reclaim down to it) is tried again
// at the next interval.
func followTasksLimit(ctx context.Context, gov *memory.Governor, src *memory.Source, set func(int64) error, every time.Duration) {
	own := gov.Stats().Sample.OwnLimit
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := gov.Stats().Sample.OwnLimit
		if now == own {
			continue
		}
		if want, err := src.TasksLimit(); err == nil && set(want) == nil {
			own = now
		}
	}
}

// tasksLimitInterval is how often a run looks at the own cgroups' limit
// to follow it with the tasks' (followTasksLimit).
const tasksLimitInterval = time.Second

// firstGuess is the need of a task of kind k when nothing better is
// known: 256 MiB for a compile, 1 GiB for a link, 64 MiB for anything
// else.
func firstGuess(k compile.Kind) int64 {
	switch k {
	case compile.Compile:
		return 256 << 20
	case compile.Link:
		return 1 << 30
	}
	return 64 << 20
}

// maxOOMRetries is how many times an OOM-killed task runs again.
const maxOOMRetries = 2

// OOMError is the error of a task the kernel's OOM killer ended for the
// last time: it ran alone, or it is not a compile or a link, or it was
// killed maxOOMRetries+1 times.
type OOMError struct {
	// Err is the process's error (killed by signal 9).
	Err error
	// Peak is the most its processes held, as seen; Alone says that no
	// other task of the run ran beside it; Runs how often it ran.
	Peak  int64
	Alone bool
	Runs  int
	// Sample is the memory when it ended; Budget the run's (0: none).
	Sample memory.Sample
	Budget int64
}

func (e *OOMError) Error() string {
	how := "beside other tasks"
	if e.Alone {
		how = "running alone"
	}
	msg := fmt.Sprintf("%v: OOM-killed %s after %d runs, at a peak of %d MiB; ", e.Err, how, e.Runs, e.Peak>>20)
	if e.Sample.Limit > 0 {
		msg += fmt.Sprintf("the limit is %d MiB (%s), ", e.Sample.Limit>>20, e.Sample.LimitFile)
	}
	msg += fmt.Sprintf("%d MiB available", e.Sample.Available>>20)
	if e.Budget > 0 {
		msg += fmt.Sprintf(", --mem %d MiB", e.Budget>>20)
	}
	return msg
}

// Unwrap returns the process's error.
func (e *OOMError) Unwrap() error { return e.Err }

// MemoryStats are a run's memory counters: the Governor's and its own.
type MemoryStats struct {
	memory.Stats
	// Waiting is how many tasks wait for memory now.
	Waiting int
	// OOMRetries counts the tasks run again after an OOM kill.
	OOMRetries int64
	// OOMKills counts the kernel's OOM kills in the run's memory cgroups
	// (its own and its tasks', memory.Source.OOMKills) since the run
	// began, whoever the victims were.
	OOMKills int64
}

// memGate admits a run's local tasks by memory, in the order they came.
type memGate struct {
	gov *memory.Governor
	src *memory.Source
	// oomBase is the OOM-kill count when the run began.
	oomBase int64
	hist    *buildgraph.History
	trace   *buildgraph.TraceWriter
	budget  int64

	mu        sync.Mutex
	queue     []*memWaiter // FIFO, retries in front
	running   map[int64]*attempt
	exclusive bool                           // an attempt that must run alone is running
	priors    [compile.Link + 1]memory.Prior // per kind, the peaks of the tasks that finished
	nextID    int64                          // attempt ids
	retries   atomic.Int64
}

// memWaiter is a task waiting for admission.
type memWaiter struct {
	a     *attempt
	ready chan struct{} // closed on admission
}

// attempt is one run of a task's process under the gate.
type attempt struct {
	id     int64
	task   string // its task's ID
	kind   compile.Kind
	need   int64
	prior  bool        // need is the run's prior for its kind, taken again at admission
	alone  bool        // must run alone
	shared atomic.Bool // another attempt ran beside it at some moment
	peak   atomic.Int64

	mu     sync.Mutex
	st     *supervise.Task // nil until forked
	frozen bool            // the Governor wants it frozen
}

func newMemGate(o *MemoryOptions, hist *buildgraph.History, trace *buildgraph.TraceWriter) *memGate {
	m := &memGate{hist: hist, trace: trace, budget: o.Thresholds.Budget, running: make(map[int64]*attempt), src: o.Source}
	m.oomBase, _ = o.Source.OOMKills()
	m.gov = memory.NewGovernor(o.Source, o.Thresholds, memory.Options{
		Interval: o.Interval,
		Changed:  m.try,
		Event:    m.event,
	})
	return m
}

// need is the first need of t, of kind k (the comment at the top);
// prior says that it is the run's prior for the kind, which changes as
// the run goes.
func (m *memGate) need(t *buildgraph.Task, k compile.Kind) (need int64, prior bool) {
	if t.MemMB > 0 {
		return int64(t.MemMB) << 20, false
	}
	if p, ok := m.hist.Peak(t); ok {
		return p, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.priorLocked(k), true
}

// priorLocked is the need of a task of kind k that the History does not
// know. m.mu held.
func (m *memGate) priorLocked(k compile.Kind) int64 {
	var held int64
	for _, a := range m.running {
		if a.kind == k {
			held = max(held, a.peak.Load())
		}
	}
	return m.priors[k].Need(firstGuess(k), held)
}

// enqueue puts a in the line for admission: behind the others, or in
// front of them (a rerun, whose dependents wait).
func (m *memGate) enqueue(a *attempt, front bool) *memWaiter {
	w := &memWaiter{a: a, ready: make(chan struct{})}
	m.mu.Lock()
	m.nextID++
	a.id = m.nextID
	if front {
		m.queue = append([]*memWaiter{w}, m.queue...)
	} else {
		m.queue = append(m.queue, w)
	}
	m.mu.Unlock()
	m.try()
	return w
}

// wait waits until the Governor admits w's attempt, which it then
// watches. It fails only when ctx is done first.
func (m *memGate) wait(ctx context.Context, w *memWaiter) error {
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, q := range m.queue {
		if q == w {
			m.queue = append(m.queue[:i], m.queue[i+1:]...)
			return ctx.Err()
		}
	}
	return nil // admitted meanwhile: it runs, and ends at once
}

// try admits the waiting tasks from the front while the Governor lets
// them in: the Governor's Changed, and every end of a task.
func (m *memGate) try() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for len(m.queue) > 0 && !m.exclusive {
		w := m.queue[0]
		a := w.a
		n := len(m.running)
		if a.prior {
			a.need = m.priorLocked(a.kind) // what the run has learned while it waited
		}
		if a.alone && n > 0 || !m.gov.Admit(a.need, n) {
			return
		}
		m.queue[0] = nil
		m.queue = m.queue[1:]
		if n > 0 {
			a.shared.Store(true)
			for _, r := range m.running {
				r.shared.Store(true)
			}
		}
		m.running[a.id] = a
		m.exclusive = a.alone
		m.gov.Add(a.id, memory.JobSpec{Need: a.need, Usage: a.usage, Freeze: a.freeze})
		close(w.ready)
	}
}

// started is the attempt's proc.Command.Started: the Governor learns its
// pid, and a freeze asked for before the fork is done now.
func (m *memGate) started(a *attempt) func(*supervise.Task) {
	return func(st *supervise.Task) {
		a.mu.Lock()
		a.st = st
		frozen := a.frozen
		a.mu.Unlock()
		m.gov.SetPid(a.id, st.Pid())
		if frozen {
			st.Stop(true)
		}
	}
}

// usage is the attempt's memory now: its cgroup's when the memory
// controller is on there, else its process tree's resident pages.
func (a *attempt) usage() int64 {
	a.mu.Lock()
	st := a.st
	a.mu.Unlock()
	if st == nil {
		return 0
	}
	n, ok := st.MemoryCurrent()
	if !ok {
		n = memory.TreeRSS("/proc", st.Pid())
	}
	for {
		p := a.peak.Load()
		if n <= p || a.peak.CompareAndSwap(p, n) {
			return n
		}
	}
}

// freeze stops or continues every process of the attempt.
func (a *attempt) freeze(stop bool) error {
	a.mu.Lock()
	a.frozen = stop
	st := a.st
	a.mu.Unlock()
	if st == nil {
		return nil
	}
	return st.Stop(stop)
}

// done stops watching a, whose process has ended with res, and returns
// the most it held and whether the OOM killer ended it.
func (m *memGate) done(a *attempt, res *proc.Result) (peak int64, oom bool) {
	e := m.gov.Remove(a.id)
	peak = max(e.Peak, a.peak.Load(), res.MaxRSS)
	oom = oomKill(res) && m.gov.OOMKilledSince(e.OOMKills)
	m.mu.Lock()
	delete(m.running, a.id)
	if a.alone {
		m.exclusive = false
	}
	if res.Outcome == proc.Succeeded {
		m.priors[a.kind].Add(peak)
	}
	m.mu.Unlock()
	m.try()
	return peak, oom
}

// oomKill reports whether res could be an OOM kill: SIGKILL, from no one
// of this run (not canceled, not timed out).
func oomKill(res *proc.Result) bool {
	return res.Outcome == proc.Failed && !res.TimedOut && res.Signal == syscall.SIGKILL
}

// retryNeed is the need of the next run of a task that held peak in a run
// of need, OOM-killed: half again the more of the two.
func retryNeed(need, peak int64) int64 { return max(need, peak) / 2 * 3 }

// heldLittle reports whether an OOM-killed task that held at most peak
// cannot have been what ran out of memory: it held less than half the
// tightest limit, or, with none, less than half of what is available now
// that it is gone.
func heldLittle(peak int64, smp memory.Sample) bool {
	if smp.Limit > 0 {
		return peak < smp.Limit/2
	}
	return peak < smp.Available/2
}

// event is the Governor's Event: freezes and thaws go to the trace.
func (m *memGate) event(id int64, froze bool, why string) {
	if m.trace == nil {
		return
	}
	name := "thaw"
	if froze {
		name = "freeze"
	}
	m.mu.Lock()
	var task string
	if a := m.running[id]; a != nil {
		task = a.task
	}
	m.mu.Unlock()
	m.trace.Instant(name, time.Now(), map[string]any{"task": task, "why": why})
}

// traceMemory draws the run's memory in the trace, a counter "memory"
// (MiB in use and available, frozen tasks, pressure), every interval
// while it changes, until ctx is done.
func (m *memGate) traceMemory(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var last map[string]float64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s := m.stats()
		v := map[string]float64{
			"in_use_mib":    float64(s.Used >> 20),
			"available_mib": float64(s.Sample.Available >> 20),
			"frozen":        float64(s.Frozen),
			"pressure_some": math.Round(s.Some),
		}
		if !maps.Equal(v, last) {
			m.trace.Counter("memory", time.Now(), v)
			last = v
		}
	}
}

// stats returns the Governor's view and the gate's counters, the OOM
// kills read afresh (a kill of the last task counts).
func (m *memGate) stats() MemoryStats {
	st := m.status()
	if n, err := m.src.OOMKills(); err == nil {
		st.OOMKills = n - m.oomBase
	}
	return st
}

// status is stats with the OOM kills of the Governor's last sample (at
// most its interval old): what a task's end reports, without reading
// the kernel's counters once a task.
func (m *memGate) status() MemoryStats {
	m.mu.Lock()
	waiting := len(m.queue)
	m.mu.Unlock()
	st := MemoryStats{Stats: m.gov.Stats(), Waiting: waiting, OOMRetries: m.retries.Load()}
	st.OOMKills = max(st.Sample.OOMKills-m.oomBase, 0)
	return st
}

// queueLocal puts t's command in the line for memory, in the order tasks
// are handed out, and returns what runs it (runLocal).
func (b *build) queueLocal(t *buildgraph.Task, cmd proc.Command) (kind compile.Kind, w *memWaiter) {
	kind = compile.Classify(cmd.Args)
	a := &attempt{task: t.ID, kind: kind}
	a.need, a.prior = b.mem.need(t, kind)
	return kind, b.mem.enqueue(a, false)
}

// runLocal runs t's command, waiting in line as w, on the runner, again
// after an OOM kill when that is safe, and returns the last run's result
// and the most it held.
func (b *build) runLocal(ctx context.Context, t *buildgraph.Task, cmd proc.Command, kind compile.Kind, w *memWaiter) (*proc.Result, int64) {
	m := b.mem
	for runs := 1; ; runs++ {
		a := w.a
		if err := m.wait(ctx, w); err != nil {
			return b.runner.Run(ctx, cmd), 0 // canceled before it ran
		}
		c := cmd
		c.Started = m.started(a)
		res := b.runner.Run(ctx, c)
		peak, oom := m.done(a, res)
		if !oom {
			return res, peak
		}
		ranAlone := !a.shared.Load()
		smp := m.gov.Stats().Sample
		if kind == compile.Other || ranAlone && !heldLittle(peak, smp) || runs > maxOOMRetries {
			res.Err = &OOMError{Err: res.Err, Peak: peak, Alone: ranAlone, Runs: runs, Sample: smp, Budget: m.budget}
			return res, peak
		}
		m.retries.Add(1)
		if b.opts.Trace != nil {
			b.opts.Trace.Instant("oom retry", time.Now(), map[string]any{"task": t.ID, "peak_mib": peak >> 20, "run": runs + 1})
		}
		res.Close()
		next := &attempt{task: t.ID, kind: kind, need: retryNeed(a.need, peak), alone: runs == maxOOMRetries}
		w = m.enqueue(next, true)
	}
}
