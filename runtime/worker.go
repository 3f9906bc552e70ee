package runtime

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"time"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/runtime/internal/deque"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// worker is one pinned thread of the runtime. Fields under "owner only" are
// read and written by the goroutine running as the worker alone: the
// worker's own, or an outside waiter it is lent to while its goroutine is
// parked (lend.go); the rest say who else touches them.
type worker struct {
	rt   *Runtime
	id   int
	cpu  int
	node int

	// Shared with thieves and submitters.
	dq     *deque.Deque[Task]   // owner pushes/pops; thieves use stealQ
	stealQ *deque.Stealer[Task] // the thieves' view of dq
	lifo   atomic.Pointer[Task] // the LIFO slot: owner Swap; thieves Swap only when the owner is busy
	inbox  inbox                // injected tasks: any goroutine pushes, owner and thieves pop
	// wake carries the park token (true = woken as a spinner, counted in
	// rt.sched for us) to whoever runs as w: the worker's goroutine (home)
	// or an outside waiter it is lent to (lentWake; lend.go). Changed
	// only under rt.idle.mu while w is off the stack and its goroutine
	// asleep; wakers read it under rt.idle.mu.
	wake     chan bool
	home     chan bool   // the worker goroutine's token channel
	lentWake chan bool   // the token channel of an outside waiter running as w
	parked   bool        // in rt.idle's stack; guarded by rt.idle.mu
	lendable bool        // parked in the scheduler loop, so it may be lent; guarded by rt.idle.mu
	busy     atomic.Bool // running a task (read by thieves deciding whether to take lifo)

	_ cacheLinePad

	// Owner only.
	spinning  bool     // counted in rt.sched's spinning half
	tick      uint32   // tasks run, for the inbox fairness check
	lifoRuns  int      // consecutive tasks taken from the LIFO slot
	free      []*Task  // recycled runtime-owned tasks
	cnt       counters // plain counters, folded into tot
	sinceFold int
	depth     int // nesting of helping Waits on this goroutine's stack
	// labels is the pprof label context the goroutine runs under: the
	// running task's named group's (labels.go), nil for none.
	labels    context.Context
	relabeled bool // setLabels changed the goroutine's labels (lend.go)

	// Remembered forks (promote.go): the list is forks[:nforks], the
	// second halves of the Joins running on this goroutine's stack,
	// oldest first; forks[:forkBase] have been promoted to the deque.
	// forks is the list's storage: it grows only by append, by a fork at
	// its end, so no slot of it is nil (noFork marks an emptied one), and
	// the slot past the list's end may keep a Jobs job for the next
	// Jobs.Join at that position (jobFrames). The length is a count, not
	// the slice's, so that a fork and a join store an int and check no
	// bounds.
	forks    []*Task
	nforks   int
	forkBase int
	// segs says whose the remembered forks are: one entry per task
	// running on this goroutine's stack (Task.run), innermost last, with
	// the list length when it started and its group; forks[k] belongs to
	// the last entry whose base is at most k. A fork's group is needed
	// only once it is promoted, so promote looks it up here instead of
	// every fork storing it.
	segs []forkSeg
	// promoteSkip is how many more forks made while a thief could use
	// work let the chance pass instead of promoting; promoteBackoff is
	// what the next promotion taken back by its own join sets it to
	// (promote.go's back-off).
	promoteSkip, promoteBackoff int
	// alone: w is the runtime's only worker, so nobody could take a fork
	// it promotes (promote). A field rather than len(rt.workers) == 1 so
	// that TestPromoteBackoff can drive promote on one worker.
	alone bool

	// The coarse clock and periodic balancing (periodic.go).
	now        int64 // ns since the runtime started, as of the last clock read
	sinceClock int   // tasks run since that read
	clockEvery int   // tasks between reads, adapted to the tasks' length
	nextBusy   int64 // when periodic balancing is next due

	_ cacheLinePad

	tot totals // folded totals; owner writes with atomic adds, Stats reads
}

// maxLIFORuns bounds how many tasks in a row may come from the LIFO slot
// before the worker takes its oldest queued task instead, so a chain of
// continuations cannot starve older work. Tokio uses 3
// (MAX_LIFO_POLLS_PER_TICK); Go's runnext inherits the time slice instead.
const maxLIFORuns = 3

// inboxEvery is how often (in tasks) a busy worker looks at its inbox
// before its own deque, so injected tasks are not starved by a deque that
// never empties. 61 is Go's schedtick%61 global-queue check, a prime so the
// check does not fall into step with program periods.
const inboxEvery = 61

func newWorker(rt *Runtime, id, cpu, node int) *worker {
	w := &worker{
		rt:       rt,
		id:       id,
		cpu:      cpu,
		node:     node,
		dq:       deque.New[Task](),
		home:     make(chan bool, 1),
		lentWake: make(chan bool, 1),

		clockEvery: 1,
	}
	w.wake = w.home
	w.stealQ = w.dq.Stealer()
	w.cnt.init(len(rt.levels))
	w.tot.init(len(rt.levels))
	return w
}

// main is the worker goroutine: lock the thread, pin it, then loop.
func (w *worker) main(started chan<- error) {
	defer w.rt.wg.Done()
	goruntime.LockOSThread()
	// The thread stays locked until exit: a pinned thread must not go back
	// to Go's pool of threads with our affinity mask, so we never unlock and
	// the Go runtime destroys the thread when this goroutine returns.
	if !w.rt.cfg.NoPin {
		if err := affinity.PinThread(cpuset.Of(w.cpu)); err != nil {
			started <- fmt.Errorf("worker %d: %w", w.id, err)
			return
		}
		if w.rt.cfg.LocalMemory {
			if err := affinity.SetMemPolicy(affinity.Local, cpuset.Set{}); err != nil {
				started <- fmt.Errorf("worker %d: %w", w.id, err)
				return
			}
		}
	}
	w.clock()
	started <- nil
	w.loop()
}

// loop is the scheduler loop (Go's schedule/findRunnable): run local work,
// else steal, else park; exit when the runtime closes and nothing is left.
func (w *worker) loop() {
	rt := w.rt
	for {
		if t := w.findWork(); t != nil {
			w.execute(t)
			continue
		}
		if rt.closing.Load() {
			// Close the inbox, then run what is left of it and of our own
			// queues; nobody else can add to the deque or the slot now
			// that we run no task.
			left := w.inbox.close()
			for _, t := range left {
				w.countInjected(t) // also clears a give-back mark (periodic.go)
				w.execute(t)
			}
			for t := w.localWork(); t != nil; t = w.localWork() {
				w.execute(t)
			}
			if w.spinning {
				w.stopSpinning()
			}
			w.fold()
			return
		}
		if w.linger() {
			continue
		}
		w.park(rt.isClosing)
	}
}

// lingerFor is how long a worker whose search failed keeps looking, as a
// spinner, while another worker is busy, before it parks: a busy worker
// promotes a remembered fork at its next fork once it sees a spinner, or
// within maxPromoteBackoff forks while it backs off (promote.go); a
// parked worker would learn of it only through a wake-up, some 120 µs
// later on a 2-vCPU guest (BenchmarkWakeLatency). 50 µs measured better
// than 20 µs and as well as 200 µs (BenchmarkFibFloor's two-worker
// layers). An idle runtime does not linger: nobody runs a task.
const lingerFor = 50 * time.Microsecond

// linger waits up to lingerFor for work to appear in some queue while w
// is a spinner and another worker runs a task, and reports whether it
// saw some (the caller then searches again). Owner only.
func (w *worker) linger() bool {
	rt := w.rt
	if !w.spinning {
		return false
	}
	var deadline time.Time
	for i := 0; ; i++ {
		if s, idle := rt.sched.load(); int(s+idle) >= len(rt.workers) {
			return false // nobody runs a task
		}
		for _, v := range rt.workers {
			if v.hasLocalWork() {
				return true
			}
		}
		if i%64 == 0 {
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(lingerFor)
			} else if now.After(deadline) {
				return false
			}
		}
	}
}

// findWork returns the next task: local work first, then a steal.
// Owner only.
func (w *worker) findWork() *Task {
	if t := w.localWork(); t != nil {
		if w.spinning {
			w.stopSpinning()
		}
		return t
	}
	if t := w.steal(); t != nil {
		return t
	}
	return nil
}

// localWork returns a task from the LIFO slot, the deque or the inbox.
// Owner only.
func (w *worker) localWork() *Task {
	w.tick++
	if w.tick%inboxEvery == 0 {
		if t := w.inbox.pop(); t != nil {
			w.countInjected(t)
			return t
		}
	}
	if w.lifoRuns < maxLIFORuns {
		if t := w.lifo.Swap(nil); t != nil {
			w.lifoRuns++
			return t
		}
	} else if t := w.lifo.Swap(nil); t != nil {
		// Bound reached: the continuation waits in the deque and the
		// oldest queued task runs now.
		w.lifoRuns = 0
		w.dq.Push(t)
		if old, _ := w.stealQ.Steal(); old != nil {
			return old
		}
	}
	w.lifoRuns = 0
	if t := w.dq.Pop(); t != nil {
		return t
	}
	if t := w.inbox.pop(); t != nil {
		w.countInjected(t)
		return t
	}
	return nil
}

// countInjected counts t, just taken from an inbox, as an injected task,
// unless periodic balancing had given it back there (periodic.go). Owner
// only (w is the taker).
func (w *worker) countInjected(t *Task) {
	if t.returned {
		t.returned = false
		return
	}
	w.cnt.injected++
}

// execute runs t, or reports it canceled, and reports its outcome.
func (w *worker) execute(t *Task) {
	rt := w.rt
	if err := t.canceledErr(rt); err != nil {
		rt.finish(w, t, canceled, err)
		return
	}
	w.busy.Store(true)
	w.maybeBalanceBusy()
	w.endBackoff() // promote.go's back-off is per task
	lc, prev := t.labelCtx(), w.labels
	if lc != prev {
		w.setLabels(lc) // a named group's task, or an unnamed one nested in it
	}
	o, err := t.run(w)
	if lc != prev {
		w.setLabels(prev)
	}
	w.busy.Store(w.depth > 0)
	w.cnt.run++
	rt.finish(w, t, o, err)
	if w.sinceFold++; w.sinceFold >= rt.cfg.foldEvery {
		w.fold()
	}
	w.tickClock()
}

// push puts a task spawned by the running task on the deque and lets an
// idle worker know. Owner only.
func (w *worker) push(t *Task) {
	w.cnt.spawned++
	t.born = w.now
	w.dq.Push(t)
	w.rt.notify()
}

// pushNext puts t in the LIFO slot; the task it displaces goes to the deque.
// Owner only.
func (w *worker) pushNext(t *Task) {
	w.cnt.spawned++
	t.born = w.now
	if old := w.lifo.Swap(t); old != nil {
		w.dq.Push(old)
	}
	w.rt.notify()
}

// newTask returns a runtime-owned task from the free list. Owner only.
func (w *worker) newTask() *Task {
	if n := len(w.free); n > 0 {
		t := w.free[n-1]
		w.free = w.free[:n-1]
		return t
	}
	return &Task{pooled: true}
}

// freeTask clears a runtime-owned task that has reported its outcome and
// returns it to the free list. Nobody else holds it by then: a deque slot
// may still point to it, but only outside the live [top, bottom) range that
// thieves read. Owner only.
func (w *worker) freeTask(t *Task) {
	if len(w.free) < 1024 {
		*t = Task{pooled: true}
		w.free = append(w.free, t)
	}
}

// steal looks for work in other workers, in the order the balancing
// policy gives (policy.go): for Hierarchical, nearest domain level first,
// the busiest group's busiest queues, remote levels only when their
// interval and should_we_balance allow. It becomes a spinning worker for
// the search unless too many already spin (park.go). The fourth attempt
// is the policy's Final pass. Owner only; allocates nothing.
func (w *worker) steal() *Task {
	rt := w.rt
	if !w.spinning {
		// Go's rule: start spinning only while 2*spinning < busy workers,
		// so at most half of the busy workers search at once.
		if !rt.sched.startSpinning(int32(len(rt.workers))) {
			return nil
		}
		w.spinning = true
	}
	pt := &rt.pol.thieves[w.id]
	th, load := pt.th, rt.load()
	s := balance.Search{Mode: balance.NewlyIdle, Now: w.clock()}
	for attempt := 0; attempt < 4; attempt++ {
		// The first pass is newly idle (CPU_NEWLY_IDLE); the ones of a
		// worker still searching after it are idle balancing (CPU_IDLE).
		if attempt > 0 {
			s.Mode = balance.Idle
		}
		s.Final = attempt == 3
		for step := range th.Steps() {
			vs := th.Victims(pt.buf[:0], step, load, s)
			level := -1
			for _, v := range vs {
				vw := rt.workerOn(v.CPU)
				if vw == nil || vw == w {
					continue
				}
				level = v.Level
				t, n, injected := w.stealFrom(vw, v.Max, s.Final)
				if t == nil {
					continue
				}
				th.Done(step, n, s)
				if injected {
					w.countInjected(t) // an inbox pickup, not a steal
				} else {
					w.cnt.steals[v.Level]++
					w.cnt.stolenFrom(vw.id, n)
					if vw.node != w.node {
						w.cnt.crossSteals++
						w.cnt.crossTasks += uint32(n)
					}
				}
				w.stopSpinning()
				return t
			}
			th.Done(step, 0, s)
			if level >= 0 {
				w.cnt.failedSteals[level]++
			}
		}
	}
	rt.handOff(w)
	return nil
}

// stealFrom takes work from v: from its deque (one task, or with maxN > 1
// up to half of it, at most maxN, the rest going to w's own deque), else
// one task from its inbox, else (last attempt only, and only while v is
// busy running something) its LIFO slot, as Go's runqsteal takes runnext
// only on the last of 4 tries. n counts the tasks taken; injected reports
// that t came from v's inbox. Owner only (it may push on w's deque).
func (w *worker) stealFrom(v *worker, maxN int, lastTry bool) (t *Task, n int, injected bool) {
	if maxN > 1 {
		if t, n := v.stealQ.StealHalf(w.dq, maxN); t != nil {
			return t, n, false
		}
	} else {
		for {
			t, retry := v.stealQ.Steal()
			if t != nil {
				return t, 1, false
			}
			if !retry {
				break
			}
		}
	}
	if t := v.inbox.pop(); t != nil {
		return t, 1, true
	}
	if lastTry && v.busy.Load() && v.lifo.Load() != nil {
		if t := v.lifo.Swap(nil); t != nil {
			return t, 1, false
		}
	}
	return nil, 0, false
}

// hasLocalWork reports whether w's own queues hold a task. Any goroutine.
func (w *worker) hasLocalWork() bool {
	return w.stealQ.Len() > 0 || w.inbox.size.Load() > 0 || w.lifo.Load() != nil
}
