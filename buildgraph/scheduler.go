package buildgraph

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"
)

// Limits bound what the running tasks of a Scheduler may hold at once.
type Limits struct {
	// Slots is the most CPU slots (Task.Slots) that running tasks hold
	// together. 0 means no limit: every ready task is handed out at once
	// (subject to MemMB and pools), for a caller that bounds concurrency
	// itself — `numasteal run -j 0` admits every task into the runtime,
	// which still runs only as many as it has CPUs.
	Slots int
	// MemMB is the most memory, in MB, that running tasks declare together
	// (Task.MemMB). 0 means no limit.
	MemMB int
	// KeepGoing keeps the schedule going after a failure (make -k): only
	// the failed task's dependents are skipped. Without it the first
	// failure stops the schedule: no new task starts, the running ones
	// finish, and those never started are NotRun (or Skipped, when they
	// depend on a failure).
	KeepGoing bool
}

// Scheduler decides which task of a graph starts next. It runs nothing:
// the caller takes a task with Next or Acquire, runs it, and reports the
// result with Done or Complete. All methods are safe for concurrent use.
//
// Order. Among ready tasks (every dependency succeeded), the one with the
// highest critical-path priority that fits the free resources goes first;
// ties go to the task earlier in the graph. A task's priority is the length
// of the longest chain of work it starts: its own weight plus the largest
// priority among the tasks that depend on it. Weights are milliseconds from
// the History (a task it does not know weighs the mean of those it does),
// or 1 per task without one; so the head of a long chain of links starts
// before a heap of short independent compiles, as in ninja 1.12. A task that
// does not fit is passed over for a lower-priority one that does
// (backfilling), so a 4-slot link cannot hold 3 free slots idle; it starts
// once enough running tasks finish and nothing of higher priority fits
// first. Since a graph is finite this delays a big task, never starves it.
//
// Limits. The slots, memory and pool depths held by running tasks never
// exceed Limits and Graph.Pools; NewScheduler rejects a task that could
// never fit, so a schedule cannot wedge.
//
// Outcomes. Failed propagates Skipped to every task that depends on the
// failure, directly or not. Without KeepGoing a failure also stops the
// schedule; Cancel stops it too. Once stopped and the running tasks are
// reported, every task left gets NotRun (or Canceled, after Cancel) and
// Finished becomes true. Each task gets exactly one Outcome.
//
// Cost. Handing out a task and reporting it cost O(log n) in the number of
// ready tasks, and Progress O(1) in the number of tasks (O(pools)): ready
// tasks wait in one heap per pool (readyq), the progress figures are kept
// as counters, and PathLeft is the top of a heap of the running tasks. The
// tasks' state sits behind one mutex, held for a few hundred nanoseconds a
// call: a process runner forks thousands of times slower, so a finer lock
// would buy nothing measurable (docs/BENCHMARKS.md, "Build scheduler scale").
type Scheduler struct {
	g      *Graph
	lim    Limits
	index  map[*Task]int
	weight []int64 // critical-path weights (priority.go)
	prio   []int64
	timed  bool // weights are milliseconds from a History
	now    func() time.Time
	// depOff and depOn hold the dependents of each task: those of task i
	// are depOn[depOff[i]:depOff[i+1]].
	depOff, depOn []int32
	// Pools by number: 0 is "no pool", then Graph.Pools in name order.
	poolName  []string
	poolDepth []int
	// maxSlots and maxMem are the largest Slots and MemMB of any task: with
	// that much free, every task fits and Next looks at no task's needs.
	maxSlots, maxMem int

	mu    sync.Mutex
	nodes []node
	// ready holds the ready tasks, one heap per pool number.
	ready      []readyq
	nready     int    // tasks in state ready
	waiting    int    // tasks in state waiting
	running    int    // tasks in state running
	runq       readyq // running tasks, and finished ones not yet pruned from the top
	workLeft   int64  // summed weight of the tasks without an outcome
	slotsUsed  int
	memUsed    int
	poolUsed   []int // by pool number
	scratch    []int32
	stopped    bool // hand out nothing more
	canceled   bool // stopped by Cancel or a Canceled task
	finished   bool // every task has an outcome
	changed    chan struct{}
	doneCounts [NumOutcomes]int
}

type nodeState uint8

const (
	stateWaiting nodeState = iota
	stateReady
	stateRunning
	stateDone
)

type node struct {
	start, end time.Time
	unmet      int32 // dependencies that have not succeeded yet
	cause      int32 // for Skipped: index of the failed task; else -1
	pool       int32 // pool number (Scheduler.poolName)
	// slots and memMB are the task's Slots() and MemMB, here so that
	// Complete reads no Task.
	slots, memMB int32
	state        nodeState
	outcome      Outcome
}

// NewScheduler validates g (Graph.Validate) and checks it against lim: a
// task needing more CPU slots than lim.Slots or more memory than lim.MemMB
// can never start, and is an *Error wrapping ErrTooBig. hist (may be nil)
// weights the critical path.
func NewScheduler(g *Graph, lim Limits, hist *History) (*Scheduler, error) {
	if lim.Slots < 0 || lim.MemMB < 0 {
		return nil, fmt.Errorf("buildgraph: NewScheduler: negative limits (slots %d, memory %d MB)", lim.Slots, lim.MemMB)
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	if len(g.Tasks) > math.MaxInt32-1 {
		return nil, fmt.Errorf("buildgraph: NewScheduler: %d tasks, more than %d", len(g.Tasks), math.MaxInt32-1)
	}
	v := validator{g: g}
	for _, t := range g.Tasks {
		if lim.Slots > 0 && t.Slots() > lim.Slots {
			v.add(t.Pos, t.ID, ErrTooBig, "task %q needs %d CPU slots, more than the %d available", t.ID, t.Slots(), lim.Slots)
		}
		if lim.MemMB > 0 && t.MemMB > lim.MemMB {
			v.add(t.Pos, t.ID, ErrTooBig, "task %q needs %d MB of memory, more than the %d MB limit", t.ID, t.MemMB, lim.MemMB)
		}
	}
	if err := v.result(); err != nil {
		return nil, err
	}

	s := &Scheduler{
		g:     g,
		lim:   lim,
		index: make(map[*Task]int, len(g.Tasks)),
		now:   monotonicClock(time.Now()),
		nodes: make([]node, len(g.Tasks)),
	}
	ids := make(map[string]int, len(g.Tasks))
	for i, t := range g.Tasks {
		s.index[t] = i
		ids[t.ID] = i
	}
	deps, _ := resolve(g, ids) // Validate succeeded, so this does too
	s.depOff, s.depOn = dependentsOf(deps)
	dependents := make([][]int, len(g.Tasks))
	for i := range dependents {
		for _, d := range s.depOn[s.depOff[i]:s.depOff[i+1]] {
			dependents[i] = append(dependents[i], int(d))
		}
	}
	s.weight, s.timed = weights(g, hist)
	s.prio = priorities(s.weight, deps, dependents)

	s.poolName = append([]string{""}, slices.Sorted(maps.Keys(g.Pools))...)
	poolNum := make(map[string]int32, len(s.poolName))
	s.poolDepth = make([]int, len(s.poolName))
	for k, name := range s.poolName[1:] {
		poolNum[name] = int32(k + 1)
		s.poolDepth[k+1] = g.Pools[name]
	}
	s.poolUsed = make([]int, len(s.poolName))
	s.ready = make([]readyq, len(s.poolName))
	for i, t := range g.Tasks {
		n := &s.nodes[i]
		n.unmet, n.cause, n.pool = int32(len(deps[i])), -1, poolNum[t.Pool]
		n.slots, n.memMB = int32(min(t.Slots(), math.MaxInt32)), int32(min(t.MemMB, math.MaxInt32))
		s.maxSlots, s.maxMem = max(s.maxSlots, t.Slots()), max(s.maxMem, t.MemMB)
		s.workLeft += s.weight[i]
		if n.unmet == 0 {
			s.makeReady(int32(i))
		} else {
			s.waiting++
		}
	}
	s.maybeFinish() // an empty graph is finished at once
	return s, nil
}

// monotonicClock returns a clock that reads the monotonic clock only: base
// plus the time since base, one clock read where time.Now takes two.
func monotonicClock(base time.Time) func() time.Time {
	return func() time.Time { return base.Add(time.Since(base)) }
}

// dependentsOf inverts deps (i depends on deps[i]) into the dependents of
// each task, packed: those of j are on[off[j]:off[j+1]], in increasing
// order.
func dependentsOf(deps [][]int) (off, on []int32) {
	off = make([]int32, len(deps)+1)
	for _, ds := range deps {
		for _, d := range ds {
			off[d+1]++
		}
	}
	for j := range deps {
		off[j+1] += off[j]
	}
	on = make([]int32, off[len(deps)])
	fill := slices.Clone(off[:len(deps)])
	for i, ds := range deps {
		for _, d := range ds {
			on[fill[d]] = int32(i)
			fill[d]++
		}
	}
	return off, on
}

// makeReady puts task i, whose dependencies have all succeeded, among the
// ready tasks. s.mu must be held (or s not yet shared).
func (s *Scheduler) makeReady(i int32) {
	n := &s.nodes[i]
	n.state = stateReady
	s.ready[n.pool].push(qent{s.prio[i], i})
	s.nready++
}

// Priority returns t's critical-path priority (see Scheduler): in
// milliseconds when a History knew some task, else in tasks.
func (s *Scheduler) Priority(t *Task) int64 { return s.prio[s.mustIndex(t, "Priority")] }

func (s *Scheduler) mustIndex(t *Task, fn string) int {
	i, ok := s.index[t]
	if !ok {
		panic("buildgraph: Scheduler." + fn + ": task is not in this schedule's graph")
	}
	return i
}

// Next returns the ready task of highest priority that fits the free
// resources, marking it running and its resources held; the caller must
// report it with Done or Complete. ok is false when no task can start now:
// all are waiting on running ones, resources are short, or the schedule is
// finished or stopped (Acquire tells those apart, and waits).
func (s *Scheduler) Next() (t *Task, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t = s.nextLocked()
	return t, t != nil
}

// Acquire is Next that waits: it returns the next task that can start,
// blocking while none can but one may later, until ctx is done. It returns
// ErrNoMoreTasks when no task will be handed out again (every task has
// started or finished, or the schedule stopped), and ctx.Err() when ctx is
// done first.
func (s *Scheduler) Acquire(ctx context.Context) (*Task, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s.mu.Lock()
		if t := s.nextLocked(); t != nil {
			s.mu.Unlock()
			return t, nil
		}
		if s.stopped || s.finished || (s.nready == 0 && s.waiting == 0) {
			s.mu.Unlock()
			return nil, ErrNoMoreTasks
		}
		ch := s.changedLocked()
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-ch:
		}
	}
}

// Wait blocks until the schedule is finished (Finished reports true) or
// ctx is done, and returns ctx.Err() in the latter case.
func (s *Scheduler) Wait(ctx context.Context) error {
	for {
		s.mu.Lock()
		if s.finished {
			s.mu.Unlock()
			return nil
		}
		ch := s.changedLocked()
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// changedLocked returns a channel closed at the next change of state.
// s.mu must be held.
func (s *Scheduler) changedLocked() <-chan struct{} {
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// notifyLocked wakes the goroutines in Acquire and Wait. s.mu must be held.
func (s *Scheduler) notifyLocked() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// nextLocked implements Next: the first ready task in scheduling order
// whose slots, memory and pool are free. Each pool's heap offers its first
// task that fits (readyq.first, bounded by the best offer so far), and the
// best offer wins; that is the first fitting task of all the ready ones in
// one order. s.mu must be held.
func (s *Scheduler) nextLocked() *Task {
	if s.stopped || s.finished || s.nready == 0 || (s.lim.Slots > 0 && s.slotsUsed >= s.lim.Slots) {
		return nil
	}
	fits := s.fitsIndex
	if (s.lim.Slots == 0 || s.slotsUsed+s.maxSlots <= s.lim.Slots) && (s.lim.MemMB == 0 || s.memUsed+s.maxMem <= s.lim.MemMB) {
		fits = fitsAll
	}
	bestPool, bestPos := -1, 0
	var best qent
	for p := range s.ready {
		q := s.ready[p]
		if len(q) == 0 || (p > 0 && s.poolUsed[p] >= s.poolDepth[p]) {
			continue
		}
		var k int
		var ok bool
		k, ok, s.scratch = q.first(fits, best, bestPool >= 0, s.scratch)
		if ok {
			bestPool, bestPos, best = p, k, q[k]
		}
	}
	if bestPool < 0 {
		return nil
	}
	s.ready[bestPool].removeAt(bestPos)
	s.nready--
	i := best.i
	n := &s.nodes[i]
	s.slotsUsed += int(n.slots)
	s.memUsed += int(n.memMB)
	s.poolUsed[bestPool]++
	n.state = stateRunning
	n.start = s.now()
	s.running++
	s.runq.push(best)
	return s.g.Tasks[i]
}

func fitsAll(int32) bool { return true }

// fitsIndex reports whether task i's slots and memory are free (its pool
// is checked by the caller).
func (s *Scheduler) fitsIndex(i int32) bool {
	n := &s.nodes[i]
	if s.lim.Slots > 0 && s.slotsUsed+int(n.slots) > s.lim.Slots {
		return false
	}
	return s.lim.MemMB == 0 || s.memUsed+int(n.memMB) <= s.lim.MemMB
}

// Done reports that a running task finished: Succeeded when ok, else
// Failed. It is Complete(t, Succeeded) or Complete(t, Failed).
func (s *Scheduler) Done(t *Task, ok bool) {
	if ok {
		s.Complete(t, Succeeded)
	} else {
		s.Complete(t, Failed)
	}
}

// Complete reports that a running task (one returned by Next or Acquire)
// ended with outcome o: Succeeded, Failed, or Canceled (killed because the
// run was canceled; this cancels the schedule as Cancel does). It releases
// the task's resources; success makes dependents ready, failure skips them.
//
// Reporting a task that is not running, or another outcome, is a bug in the
// caller and panics.
func (s *Scheduler) Complete(t *Task, o Outcome) {
	i := s.mustIndex(t, "Complete")
	s.mu.Lock()
	defer s.mu.Unlock()
	n := &s.nodes[i]
	if n.state != stateRunning {
		panic(fmt.Sprintf("buildgraph: Scheduler.Complete: task %q is not running", t.ID))
	}
	if o != Succeeded && o != Failed && o != Canceled {
		panic(fmt.Sprintf("buildgraph: Scheduler.Complete: task %q: outcome %v is not Succeeded, Failed or Canceled", t.ID, o))
	}
	s.slotsUsed -= int(n.slots)
	s.memUsed -= int(n.memMB)
	s.poolUsed[n.pool]--
	s.running--
	s.finishNode(i, o, -1)
	n.end = s.now()
	// Prune finished tasks off the top of runq, so its top is the running
	// task of highest priority (Progress.PathLeft). Each task leaves once.
	for len(s.runq) > 0 && s.nodes[s.runq[0].i].state != stateRunning {
		s.runq.removeAt(0)
	}

	switch o {
	case Succeeded:
		for _, d := range s.depOn[s.depOff[i]:s.depOff[i+1]] {
			dn := &s.nodes[d]
			if dn.unmet--; dn.unmet == 0 && dn.state == stateWaiting {
				s.waiting--
				s.makeReady(d)
			}
		}
	case Failed:
		s.skipDependents(i)
		if !s.lim.KeepGoing {
			s.stopped = true
		}
	case Canceled:
		s.stopped, s.canceled = true, true
	}
	s.maybeFinish()
	s.notifyLocked()
}

// skipDependents marks every task that depends on the failed task i,
// directly or not, Skipped. Those tasks are all waiting: none can have
// started, since a task starts only after all its dependencies succeed.
func (s *Scheduler) skipDependents(i int) {
	stack := []int32{int32(i)}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range s.depOn[s.depOff[j]:s.depOff[j+1]] {
			if s.nodes[d].state == stateWaiting {
				s.waiting--
				s.finishNode(int(d), Skipped, i)
				stack = append(stack, d)
			}
		}
	}
}

// finishNode gives node i its outcome. The caller adjusts the state counts.
func (s *Scheduler) finishNode(i int, o Outcome, cause int) {
	n := &s.nodes[i]
	n.state, n.outcome, n.cause = stateDone, o, int32(cause)
	s.doneCounts[o]++
	s.workLeft -= s.weight[i]
}

// maybeFinish ends the schedule when nothing runs and nothing more will:
// the tasks never started become NotRun (or Canceled). s.mu must be held
// (or s not yet shared).
func (s *Scheduler) maybeFinish() {
	if s.finished || s.running > 0 || !(s.stopped || (s.nready == 0 && s.waiting == 0)) {
		return
	}
	rest := NotRun
	if s.canceled {
		rest = Canceled
	}
	if s.nready+s.waiting > 0 {
		for i := range s.nodes {
			if st := s.nodes[i].state; st == stateWaiting || st == stateReady {
				s.finishNode(i, rest, -1)
			}
		}
	}
	s.ready, s.runq, s.scratch = nil, nil, nil
	s.nready, s.waiting = 0, 0
	s.finished = true
}

// Cancel stops the schedule: no task starts after it returns. The running
// tasks must still be reported (Complete with Canceled once killed, or
// Done); then every task never started is Canceled, unless a failed
// dependency made it Skipped first.
func (s *Scheduler) Cancel() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finished {
		return
	}
	s.stopped, s.canceled = true, true
	s.maybeFinish()
	s.notifyLocked()
}

// Finished reports whether every task has its outcome.
func (s *Scheduler) Finished() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finished
}

// Stopped reports whether the schedule hands out no more tasks because of
// a failure (without KeepGoing) or a cancellation, even if tasks still run.
func (s *Scheduler) Stopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// Result returns t's result so far (Outcome Unfinished until it has one).
func (s *Scheduler) Result(t *Task) Result {
	i := s.mustIndex(t, "Result")
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resultLocked(i)
}

func (s *Scheduler) resultLocked(i int) Result {
	n := &s.nodes[i]
	r := Result{Task: s.g.Tasks[i], Outcome: n.outcome, Start: n.start, End: n.end}
	if n.cause >= 0 {
		r.Cause = s.g.Tasks[n.cause]
	}
	return r
}

// Results returns every task's result, in graph order. Call it once
// Finished reports true for final outcomes.
func (s *Scheduler) Results() []Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := make([]Result, len(s.nodes))
	for i := range s.nodes {
		rs[i] = s.resultLocked(i)
	}
	return rs
}

// Progress returns a snapshot of the schedule. It reads counters kept as
// the schedule goes and the tops of the heaps, so its cost does not depend
// on the number of tasks: a display may call it after every completion.
func (s *Scheduler) Progress() Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := Progress{
		Total:     len(s.nodes),
		Waiting:   s.waiting,
		Ready:     s.nready,
		Running:   s.running,
		Done:      s.doneCounts,
		SlotsUsed: s.slotsUsed,
		MemUsedMB: s.memUsed,
		WorkLeft:  s.workLeft,
		Timed:     s.timed,
	}
	// A waiting task's chain is part of an unfinished dependency's, so the
	// longest chain left starts at a ready or a running task.
	for _, q := range s.ready {
		if len(q) > 0 {
			p.PathLeft = max(p.PathLeft, q[0].prio)
		}
	}
	if len(s.runq) > 0 {
		p.PathLeft = max(p.PathLeft, s.runq[0].prio)
	}
	return p
}
