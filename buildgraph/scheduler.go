package buildgraph

import (
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
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
// Cost. Handing out a task and reporting it cost O(log₆₄ n) plus the
// task's dependents, and Progress O(pools), whatever the number of tasks:
// NewScheduler numbers the tasks in scheduling order (by pool, then
// priority, then graph order), so that the ready tasks of a pool are the
// members of a range of one bitmap tree (readySet) and the next task is its
// first member; the Scheduler's arrays are indexed by that number, so a
// build walks them front to back whatever order its graph lists tasks in;
// Complete finds a task's number in a small cache of the tasks handed out,
// else in the Task, where NewScheduler records it; and a waiting task's
// count of unmet dependencies is a byte. The progress figures are counters, and
// PathLeft is the top of a heap of the running tasks. The state sits
// behind one mutex, held well under a microsecond a call: a process runner
// forks thousands of times slower, so a finer lock would buy nothing
// measurable (docs/BENCHMARKS.md, "Build scheduler scale").
type Scheduler struct {
	lim   Limits
	timed bool // weights are milliseconds from a History
	// base is the clock's origin: node times are nanoseconds after it, read
	// by since (one monotonic clock read).
	base  time.Time
	since func() int64

	// Positions. tasks[x] is the task at position x of the scheduling
	// order; every array below is indexed by position. The dependents of
	// position x are at depOn[depOff[x]:depOff[x+1]].
	tasks         []*Task
	depOff, depOn []int32
	// Pools by number: 0 is "no pool", then Graph.Pools in name order. The
	// tasks of pool p hold positions poolStart[p] to poolStart[p+1]-1.
	poolDepth []int
	poolStart []int32
	// maxSlots and maxMem are the largest Slots and MemMB of any task: with
	// that much free, every task fits and Next looks at no task's needs.
	maxSlots, maxMem int
	// byTask finds the position of a task whose recorded position belongs
	// to another Scheduler over a graph that shares it (position).
	byTaskOnce sync.Once
	byTask     map[*Task]int32

	mu    sync.Mutex
	nodes []node
	// recent maps a hash of each task lately handed out to the task and
	// its position (a direct-mapped cache, 2^k entries), so that Complete
	// finds a running task without reading the Task: a caller that has not
	// touched it since (a runner that starts nothing) would pay a cache
	// miss for that read in a large graph. A colliding task falls back to
	// the position recorded in the Task.
	recent     []recentEntry
	recentSeed maphash.Seed
	// unmet counts the dependencies of each waiting task that have not
	// succeeded yet, a byte a task, so that the counters of a million
	// tasks, which a random graph's completions reach at random, take 1 MiB
	// of cache and not 4. A task with unmetSkipped or more dependencies
	// has unmetMany there and its count in bigUnmet (unmet.go).
	unmet      []uint8
	bigUnmet   map[int32]int32
	ready      readySet // positions of the ready tasks
	nready     int      // ready tasks
	waiting    int      // tasks waiting on a dependency
	running    int      // tasks in state running
	runq       readyq   // running tasks, and finished ones not yet pruned from the top
	workLeft   int64    // summed weight of the tasks without an outcome
	slotsUsed  int
	memUsed    int
	poolUsed   []int // by pool number
	stopped    bool  // hand out nothing more
	canceled   bool  // stopped by Cancel or a Canceled task
	finished   bool  // every task has an outcome
	changed    chan struct{}
	doneCounts [NumOutcomes]int
}

type nodeState uint8

const (
	stateWaiting nodeState = iota // waiting on a dependency, or ready (in Scheduler.ready)
	stateRunning
	stateDone
)

type recentEntry struct {
	t *Task
	x int32
}

// node is what the Scheduler keeps of the task at one position.
type node struct {
	start, end   int64 // nanoseconds after Scheduler.base; 0 when not yet
	prio, weight int64 // critical-path priority and weight (priority.go)
	index        int32 // in Graph.Tasks
	cause        int32 // for Skipped: position of the failed task; else -1
	pool         int32 // pool number (Scheduler.poolDepth)
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
//
// NewScheduler records in each of g's tasks its position in this schedule
// (an unexported field, written atomically), which Complete, Result and
// Priority read back; a task shared with another Scheduler's graph is
// still found, through a map built when first needed.
func NewScheduler(g *Graph, lim Limits, hist *History) (*Scheduler, error) {
	if lim.Slots < 0 || lim.MemMB < 0 {
		return nil, fmt.Errorf("buildgraph: NewScheduler: negative limits (slots %d, memory %d MB)", lim.Slots, lim.MemMB)
	}
	deps, err := g.validate()
	if err != nil {
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

	n := len(g.Tasks)
	base := time.Now()
	s := &Scheduler{
		lim:        lim,
		base:       base,
		since:      func() int64 { return int64(time.Since(base)) },
		recentSeed: maphash.MakeSeed(),
	}
	// A running task is missed when one of the tasks handed out while it
	// runs takes its entry: with S running and 32·S entries, about one in
	// 32. Past maxRecent, misses grow; the fallback reads the Task.
	recent := 256
	for recent < maxRecent && (lim.Slots == 0 || recent < 32*lim.Slots) {
		recent *= 2
	}
	s.recent = make([]recentEntry, recent)
	off, on := dependentsOf(deps)
	var weight []int64
	weight, s.timed = weights(g, hist)
	prio := priorities(weight, deps, off, on)

	poolName := append([]string{""}, slices.Sorted(maps.Keys(g.Pools))...)
	poolNum := make(map[string]int32, len(poolName))
	s.poolDepth = make([]int, len(poolName))
	for k, name := range poolName[1:] {
		poolNum[name] = int32(k + 1)
		s.poolDepth[k+1] = g.Pools[name]
	}
	s.poolUsed = make([]int, len(poolName))

	// The scheduling order: by pool, then priority, then graph order.
	keys := make([]orderKey, n)
	for i, t := range g.Tasks {
		keys[i] = orderKey{prio: prio[i], pool: poolNum[t.Pool], index: int32(i)}
	}
	slices.SortFunc(keys, orderKey.compare)
	s.poolStart = make([]int32, len(poolName)+1)
	posOf := make([]int32, n)
	s.tasks = make([]*Task, n)
	s.nodes = make([]node, n)
	s.unmet = make([]uint8, n)
	s.ready = newReadySet(n)
	for x, k := range keys {
		i := k.index
		t := g.Tasks[i]
		posOf[i] = int32(x)
		s.tasks[x] = t
		s.poolStart[k.pool+1]++
		s.nodes[x] = node{
			prio: prio[i], weight: weight[i], index: i, cause: -1, pool: k.pool,
			slots: int32(min(t.Slots(), math.MaxInt32)), memMB: int32(min(t.MemMB, math.MaxInt32)),
		}
		s.setUnmet(int32(x), len(deps[i]))
		s.maxSlots, s.maxMem = max(s.maxSlots, t.Slots()), max(s.maxMem, t.MemMB)
		s.workLeft += weight[i]
	}
	for p := range poolName {
		s.poolStart[p+1] += s.poolStart[p]
	}
	s.depOff = make([]int32, n+1)
	s.depOn = make([]int32, 0, len(on))
	for x, k := range keys {
		for _, d := range on[off[k.index]:off[k.index+1]] {
			s.depOn = append(s.depOn, posOf[d])
		}
		s.depOff[x+1] = int32(len(s.depOn))
	}
	for x, t := range s.tasks {
		atomic.StoreInt32(&t.slot, int32(x))
		if s.unmet[x] == 0 {
			s.makeReady(int32(x))
		} else {
			s.waiting++
		}
	}
	s.maybeFinish() // an empty graph is finished at once
	return s, nil
}

// maxRecent bounds Scheduler.recent: 4096 entries, 64 KiB.
const maxRecent = 4096

// orderKey places a task in the scheduling order.
type orderKey struct {
	prio  int64
	pool  int32
	index int32
}

func (a orderKey) compare(b orderKey) int {
	if c := cmp.Compare(a.pool, b.pool); c != 0 {
		return c
	}
	if c := cmp.Compare(b.prio, a.prio); c != 0 {
		return c
	}
	return cmp.Compare(a.index, b.index)
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

// makeReady puts the task at position x, whose dependencies have all
// succeeded, among the ready tasks. s.mu must be held (or s not yet
// shared).
func (s *Scheduler) makeReady(x int32) {
	s.ready.add(x)
	s.nready++
}

// clock returns the nanoseconds since s.base, at least 1 (0 means "not
// yet" in a node).
func (s *Scheduler) clock() int64 { return max(s.since(), 1) }

// position returns t's position in this schedule: the one NewScheduler
// recorded in t, or, when another Scheduler has since recorded its own,
// the one a map of all tasks gives.
func (s *Scheduler) position(t *Task) (int32, bool) {
	if t == nil {
		return 0, false
	}
	if x := atomic.LoadInt32(&t.slot); x >= 0 && int(x) < len(s.tasks) && s.tasks[x] == t {
		return x, true
	}
	s.byTaskOnce.Do(func() {
		s.byTask = make(map[*Task]int32, len(s.tasks))
		for x, t := range s.tasks {
			s.byTask[t] = int32(x)
		}
	})
	x, ok := s.byTask[t]
	return x, ok
}

// Priority returns t's critical-path priority (see Scheduler): in
// milliseconds when a History knew some task, else in tasks.
func (s *Scheduler) Priority(t *Task) int64 { return s.nodes[s.mustPosition(t, "Priority")].prio }

func (s *Scheduler) mustPosition(t *Task, fn string) int32 {
	x, ok := s.position(t)
	if !ok {
		panic("buildgraph: Scheduler." + fn + ": task is not in this schedule's graph")
	}
	return x
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
// whose slots, memory and pool are free. Each pool's ready tasks are in
// order in their range of s.ready, so the pool offers its first member that
// fits and goes before the best offer so far, and the best offer wins. When
// every task fits, each pool's offer is its first member; otherwise the
// walk reads only the ready tasks that go before the answer. s.mu must be
// held.
func (s *Scheduler) nextLocked() *Task {
	if s.stopped || s.finished || s.nready == 0 || (s.lim.Slots > 0 && s.slotsUsed >= s.lim.Slots) {
		return nil
	}
	fitsAll := (s.lim.Slots == 0 || s.slotsUsed+s.maxSlots <= s.lim.Slots) && (s.lim.MemMB == 0 || s.memUsed+s.maxMem <= s.lim.MemMB)
	best := int32(-1)
	for p := range s.poolDepth {
		if p > 0 && s.poolUsed[p] >= s.poolDepth[p] {
			continue
		}
		end := s.poolStart[p+1]
		for x := s.ready.next(s.poolStart[p]); x >= 0 && x < end; x = s.ready.next(x + 1) {
			if best >= 0 && !s.before(x, best) {
				break
			}
			if fitsAll || s.fits(x) {
				best = x
				break
			}
		}
	}
	if best < 0 {
		return nil
	}
	s.ready.remove(best)
	s.nready--
	n := &s.nodes[best]
	s.slotsUsed += int(n.slots)
	s.memUsed += int(n.memMB)
	s.poolUsed[n.pool]++
	n.state = stateRunning
	n.start = s.clock()
	s.running++
	s.runq.push(qent{n.prio, best})
	t := s.tasks[best]
	s.recent[s.recentHash(t)] = recentEntry{t, best}
	return t
}

// recentHash returns t's entry number in s.recent.
func (s *Scheduler) recentHash(t *Task) uint64 {
	return maphash.Comparable(s.recentSeed, t) & uint64(len(s.recent)-1)
}

// before reports whether the task at position x goes before the one at y
// in scheduling order, pools aside: higher priority, then earlier in the
// graph.
func (s *Scheduler) before(x, y int32) bool {
	a, b := &s.nodes[x], &s.nodes[y]
	return a.prio > b.prio || (a.prio == b.prio && a.index < b.index)
}

// fits reports whether the slots and memory of the task at position x are
// free (its pool is checked by the caller).
func (s *Scheduler) fits(x int32) bool {
	n := &s.nodes[x]
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
	s.mu.Lock()
	defer s.mu.Unlock()
	x := int32(-1)
	if e := s.recent[s.recentHash(t)]; e.t == t && t != nil {
		x = e.x
	} else {
		x = s.mustPosition(t, "Complete")
	}
	n := &s.nodes[x]
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
	s.finishNode(x, o, -1)
	n.end = s.clock()
	// Prune finished tasks off the top of runq, so its top is the running
	// task of highest priority (Progress.PathLeft). Each task leaves once.
	for len(s.runq) > 0 && s.nodes[s.runq[0].i].state != stateRunning {
		s.runq.removeAt(0)
	}

	switch o {
	case Succeeded:
		for _, d := range s.depOn[s.depOff[x]:s.depOff[x+1]] {
			if s.depSucceeded(d) {
				s.waiting--
				s.makeReady(d)
			}
		}
	case Failed:
		s.skipDependents(x)
		if !s.lim.KeepGoing {
			s.stopped = true
		}
	case Canceled:
		s.stopped, s.canceled = true, true
	}
	s.maybeFinish()
	s.notifyLocked()
}

// skipDependents marks every task that depends on the failed task at x,
// directly or not, Skipped. Those tasks are all waiting: none can have
// started, since a task starts only after all its dependencies succeed.
func (s *Scheduler) skipDependents(x int32) {
	stack := []int32{x}
	for len(stack) > 0 {
		j := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range s.depOn[s.depOff[j]:s.depOff[j+1]] {
			if s.nodes[d].state == stateWaiting {
				s.waiting--
				s.depFailed(d)
				s.finishNode(d, Skipped, x)
				stack = append(stack, d)
			}
		}
	}
}

// finishNode gives the task at x its outcome. The caller adjusts the state
// counts.
func (s *Scheduler) finishNode(x int32, o Outcome, cause int32) {
	n := &s.nodes[x]
	n.state, n.outcome, n.cause = stateDone, o, cause
	s.doneCounts[o]++
	s.workLeft -= n.weight
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
		for x := range s.nodes {
			if s.nodes[x].state == stateWaiting {
				s.finishNode(int32(x), rest, -1)
			}
		}
	}
	s.ready, s.runq, s.unmet, s.bigUnmet = readySet{}, nil, nil, nil
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
	x := s.mustPosition(t, "Result")
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resultLocked(x)
}

func (s *Scheduler) resultLocked(x int32) Result {
	n := &s.nodes[x]
	r := Result{Task: s.tasks[x], Outcome: n.outcome, Start: s.timeAt(n.start), End: s.timeAt(n.end)}
	if n.cause >= 0 {
		r.Cause = s.tasks[n.cause]
	}
	return r
}

// timeAt returns the time of a node's clock reading, or the zero Time for
// none.
func (s *Scheduler) timeAt(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return s.base.Add(time.Duration(ns))
}

// Results returns every task's result, in graph order. Call it once
// Finished reports true for final outcomes.
func (s *Scheduler) Results() []Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := make([]Result, len(s.nodes))
	for x := range s.nodes {
		rs[s.nodes[x].index] = s.resultLocked(int32(x))
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
	if s.nready > 0 {
		for k := range s.poolDepth {
			if x := s.ready.next(s.poolStart[k]); x >= 0 && x < s.poolStart[k+1] {
				p.PathLeft = max(p.PathLeft, s.nodes[x].prio)
			}
		}
	}
	if len(s.runq) > 0 {
		p.PathLeft = max(p.PathLeft, s.runq[0].prio)
	}
	return p
}
