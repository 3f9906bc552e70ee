package buildgraph

import (
	"context"
	"fmt"
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
type Scheduler struct {
	g      *Graph
	lim    Limits
	index  map[*Task]int
	weight []int64 // critical-path weights (priority.go)
	prio   []int64
	timed  bool // weights are milliseconds from a History
	now    func() time.Time

	mu         sync.Mutex
	nodes      []node
	ready      []int // best last: by priority, then graph order reversed
	waiting    int   // tasks in state waiting
	running    int
	slotsUsed  int
	memUsed    int
	poolUsed   map[string]int
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
	dependents []int // indices of the tasks that depend on this one
	unmet      int   // dependencies that have not succeeded yet
	state      nodeState
	outcome    Outcome
	cause      int // for Skipped: index of the failed task; else -1
	start, end time.Time
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
		g:        g,
		lim:      lim,
		index:    make(map[*Task]int, len(g.Tasks)),
		now:      time.Now,
		nodes:    make([]node, len(g.Tasks)),
		poolUsed: make(map[string]int),
	}
	ids := make(map[string]int, len(g.Tasks))
	for i, t := range g.Tasks {
		s.index[t] = i
		ids[t.ID] = i
	}
	deps, _ := resolve(g, ids) // Validate succeeded, so this does too
	dependents := make([][]int, len(g.Tasks))
	for i, ds := range deps {
		for _, d := range ds {
			dependents[d] = append(dependents[d], i)
		}
	}
	s.weight, s.timed = weights(g, hist)
	s.prio = priorities(s.weight, deps, dependents)
	for i := range s.nodes {
		n := &s.nodes[i]
		n.dependents, n.unmet, n.cause = dependents[i], len(deps[i]), -1
		if n.unmet == 0 {
			n.state = stateReady
			s.ready = append(s.ready, i)
		} else {
			s.waiting++
		}
	}
	slices.SortFunc(s.ready, s.cmpReady)
	s.maybeFinish() // an empty graph is finished at once
	return s, nil
}

// cmpReady orders the ready list so that the best task is last, where
// taking it costs nothing: lower priority first, and among equals the task
// later in the graph first.
func (s *Scheduler) cmpReady(a, b int) int {
	switch {
	case s.prio[a] < s.prio[b]:
		return -1
	case s.prio[a] > s.prio[b]:
		return 1
	}
	return b - a
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
		if s.stopped || s.finished || (len(s.ready) == 0 && s.waiting == 0) {
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

// nextLocked implements Next. s.mu must be held.
func (s *Scheduler) nextLocked() *Task {
	if s.stopped || s.finished || (s.lim.Slots > 0 && s.slotsUsed >= s.lim.Slots) {
		return nil
	}
	for k := len(s.ready) - 1; k >= 0; k-- {
		i := s.ready[k]
		t := s.g.Tasks[i]
		if !s.fits(t) {
			continue
		}
		s.ready = slices.Delete(s.ready, k, k+1)
		s.slotsUsed += t.Slots()
		s.memUsed += t.MemMB
		if t.Pool != "" {
			s.poolUsed[t.Pool]++
		}
		n := &s.nodes[i]
		n.state = stateRunning
		n.start = s.now()
		s.running++
		return t
	}
	return nil
}

// fits reports whether t can start with the resources now free.
func (s *Scheduler) fits(t *Task) bool {
	if s.lim.Slots > 0 && s.slotsUsed+t.Slots() > s.lim.Slots {
		return false
	}
	if s.lim.MemMB > 0 && s.memUsed+t.MemMB > s.lim.MemMB {
		return false
	}
	return t.Pool == "" || s.poolUsed[t.Pool] < s.g.Pools[t.Pool]
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
	s.slotsUsed -= t.Slots()
	s.memUsed -= t.MemMB
	if t.Pool != "" {
		s.poolUsed[t.Pool]--
	}
	s.running--
	s.finishNode(i, o, -1)
	n.end = s.now()

	switch o {
	case Succeeded:
		added := 0
		for _, d := range n.dependents {
			dn := &s.nodes[d]
			if dn.unmet--; dn.unmet == 0 && dn.state == stateWaiting {
				dn.state = stateReady
				s.waiting--
				s.ready = append(s.ready, d)
				added++
			}
		}
		switch {
		case added == 1: // the common case: move it into place
			d := s.ready[len(s.ready)-1]
			k, _ := slices.BinarySearchFunc(s.ready[:len(s.ready)-1], d, s.cmpReady)
			copy(s.ready[k+1:], s.ready[k:len(s.ready)-1])
			s.ready[k] = d
		case added > 1: // a header that thousands of compiles wait for
			slices.SortFunc(s.ready, s.cmpReady)
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
	stack := []int{i}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range s.nodes[j].dependents {
			if s.nodes[d].state == stateWaiting {
				s.waiting--
				s.finishNode(d, Skipped, i)
				stack = append(stack, d)
			}
		}
	}
}

// finishNode gives node i its outcome. The caller adjusts the state counts.
func (s *Scheduler) finishNode(i int, o Outcome, cause int) {
	n := &s.nodes[i]
	n.state, n.outcome, n.cause = stateDone, o, cause
	s.doneCounts[o]++
}

// maybeFinish ends the schedule when nothing runs and nothing more will:
// the tasks never started become NotRun (or Canceled). s.mu must be held
// (or s not yet shared).
func (s *Scheduler) maybeFinish() {
	if s.finished || s.running > 0 || !(s.stopped || (len(s.ready) == 0 && s.waiting == 0)) {
		return
	}
	rest := NotRun
	if s.canceled {
		rest = Canceled
	}
	for i := range s.nodes {
		if st := s.nodes[i].state; st == stateWaiting || st == stateReady {
			s.finishNode(i, rest, -1)
		}
	}
	s.ready, s.waiting = nil, 0
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

// Progress returns a snapshot of the schedule. It walks every task for
// WorkLeft and PathLeft; a display that calls it ten times a second costs
// microseconds for thousands of tasks.
func (s *Scheduler) Progress() Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := Progress{
		Total:     len(s.nodes),
		Waiting:   s.waiting,
		Ready:     len(s.ready),
		Running:   s.running,
		Done:      s.doneCounts,
		SlotsUsed: s.slotsUsed,
		MemUsedMB: s.memUsed,
		Timed:     s.timed,
	}
	for i := range s.nodes {
		switch s.nodes[i].state {
		case stateReady, stateRunning:
			// A waiting task's chain is part of an unfinished dependency's.
			p.PathLeft = max(p.PathLeft, s.prio[i])
			fallthrough
		case stateWaiting:
			p.WorkLeft += s.weight[i]
		}
	}
	return p
}
