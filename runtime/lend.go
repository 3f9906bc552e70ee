package runtime

import (
	goruntime "runtime"
	"runtime/pprof"
	"time"
)

// Outside submissions: the late wake and the lent worker
//
// The problem. An embedder that serves requests submits small groups from
// a goroutine that is not a worker and blocks in Group.Wait. With the
// workers parked, such a round trip wakes a worker for the tasks, and the
// worker that ends the group wakes the waiter. Waking a worker costs far
// more than waking a goroutine: its goroutine is locked to a pinned
// thread, so the Go scheduler hands a P to that thread (a futex wake and
// a thread switch) and takes it back when the worker parks again
// (stoplockedm: another), and the waiter's wake-up is one more: about 7
// context switches and 2 worker wake-ups for a 4-task round trip, where
// errgroup's goroutines run on the submitter's P without a thread switch.
//
// The design has two parts.
//
//  1. The late wake. An outside injection that would wake a parked worker
//     (park.go, step 1: none spins, one is parked) leaves the wake-up to a
//     goroutine, at most one per group at a time (Group.lateWake):
//     lateNotify calls notify when it runs, unless the group has no
//     unfinished task or no queue holds work. While a waiter runs the
//     group's tasks (part 2) it lets the waiter alone for lateHelpWait
//     first, and wakes a worker only for what is still queued then, so
//     that long tasks still run in parallel. Starting a goroutine costs
//     about what errgroup pays for each of its tasks: it runs on the
//     submitter's P or an idle one, on a thread that is not locked. A
//     submitter that does not wait (Runtime.Go, forgotten) has its task
//     started once that goroutine has run: a few microseconds later than
//     a wake-up from Go itself, which took tens.
//  2. The lent worker. Group.Wait, before it blocks, visits the workers
//     whose inbox has one of the group's tasks at its front (the policy
//     may spread a group over idle workers), starting with the worker of
//     the injector's CPU (Group.fromCPU). Each that is parked
//     in its scheduler loop is lent to the waiter (lend), which runs as
//     that worker on its own goroutine: the group's tasks at the front of
//     the worker's inbox, and what they push onto its deque and LIFO
//     slot, until the group is done or none is left. Then it gives the
//     worker back (giveBack): the worker parks again without sleeping,
//     and its goroutine is woken only if there is work for it. The
//     worker's goroutine sleeps throughout: in Go runtime terms the
//     worker's queues, counters and identity are a P, its pinned thread
//     an M, and the waiter is another M on that P meanwhile. A round trip
//     whose tasks the waiter runs all itself wakes no thread, and its
//     late wake, when it runs, finds the group done and does nothing.
//
// Why no wake-up is lost. (1) is step 1 of park.go's protocol done late:
// the invariant's argument needs only that the producer's load of
// rt.sched comes after its publish, and lateNotify's load comes after
// every publish it covers. Until it runs (and while it lets a waiter
// alone), a queued task has a pending notify, which counts as a worker
// being woken. A producer that finds lateWake set relies on the pending
// lateNotify, which clears the flag before each look at the group and
// the queues, so it sees every task published before the flag was found
// set; a producer after the clear starts a new one. (2) A lent worker is
// off the idle stack, as a running one is, and it is running: its owner,
// the waiter, runs its queued work or gives it back and then looks at
// the worker's own queues, which is all that producers relied on it for
// (a lent worker does not spin). The look also wakes it when a worker
// that is not parked has work queued and none spins, as a worker that
// finishes a task would search before it parks. A worker may be lent
// between publishing itself parked and park's final look: that look
// covers a task published while the worker ended its search, whose
// producer saw the spinner gone; the producer woke a parked worker if
// one was counted, and otherwise the task's own worker was running (or
// lent, and looks at its own queues when given back) or had yet to park,
// and a worker sees its own queues before it parks. A task the waiter
// runs may block, say until another task of its group queued behind it
// has run: as for a blocked worker (TestBlockedOwnersInboxIsStolen),
// that one is run by a worker that the late notify wakes once its wait
// for the waiter is over, stealing from the lent worker's inbox.
//
// Who runs as a worker. Owner-only fields belong to whoever runs as w:
// its goroutine, or the waiter it is lent to. Only a worker parked in its
// scheduler loop (park's lendable: no task on its goroutine's stack) is
// lent, to one waiter at a time, and its goroutine touches nothing of w's
// but shared fields between publishing itself parked and receiving its
// token. A waiter's helping waits inside the tasks it runs (Ctx.Wait, a
// stolen Join's wait) park as w like any helping wait, but receive their
// token on w.lentWake: w.wake names the channel of whoever runs as w, is
// changed only under rt.idle.mu while w is off the stack, and is read by
// wakers under that lock. The waiter runs only its group's subtree
// (lentWork): a lent worker balances periodically as any busy worker
// does, and what it pulls from another group is left to its goroutine.
//
// What a task run by the waiter sees. Its Ctx is the lent worker's:
// Ctx.Worker, CPU and Node are that worker's, its spawns go onto that
// worker's deque, its counters count there. The thread is the waiter's:
// it is not pinned, and it has the waiter's memory policy, not the one
// Config.LocalMemory gives worker threads. On an idle machine the policy places an outside
// task on the worker of the submitter's CPU (balance.PlaceFork: "stay"),
// so the waiter starts its tasks on that CPU, but the kernel may move its
// thread. A named group's task labels the waiter's goroutine for the
// profiler while it runs (labels.go); the waiter's labels are afterwards
// those of the group's parent context, the one given to Runtime.Group,
// which is where pprof.Do puts them.
//
// BenchmarkOutsideVsErrgroup4 and BenchmarkOutsideVsErrgroupMany compare
// both shapes with errgroup limited to one goroutine per CPU, alternated;
// docs/BENCHMARKS.md ("Build scheduler scale") has their current ratios.
//
// Rejected designs. (a) Waking a worker as soon as tasks are queued
// while the waiter helps: the woken worker takes some of the group's
// tasks, the waiter then blocks for them, and the workers stay awake
// from one round trip to the next. A late wake that did not let the
// waiter alone so measured 25-70 µs round trips with one or two worker
// wake-ups each. (b) A timer in place of the goroutine: when the process
// is otherwise idle the Go runtime's netpoller sleeps at least a
// millisecond, so a short timer fires that late, and a task submitted
// and not waited for would wait as long. (c) Running a task inline in
// Group.Go: Go then blocks for the task's length, and the group's later
// tasks are not even submitted meanwhile. (d) Workers that spin a while
// before parking: a spinning worker holds a P, and with as many workers
// as Ps the submitter waits for one; a locked goroutine that yields its
// P hands off its thread, which is the cost to avoid.

// notifyLater is notify for an injection into g from outside the
// workers: a wake-up that notify would make is left to lateNotify, run
// by a goroutine of its own. Any goroutine.
func (rt *Runtime) notifyLater(g *Group) {
	if s, idle := rt.sched.load(); s != 0 || idle == 0 {
		return // a spinner will find the task, or no worker is parked
	}
	if g.lateWake.CompareAndSwap(false, true) {
		go g.lateNotify()
	}
}

// lateNotify is the late half of notifyLater: step 1's load and wake-up,
// unless no task of g is left unfinished or no queue holds work. While a
// waiter runs g's tasks as a lent worker (Group.helpers), that worker's
// owner is running and no wake-up is owed; one would only run the rest
// of g beside the waiter, and for short tasks it costs more than it
// saves. So lateNotify gives the waiter lateHelpWait to finish, yielding
// meanwhile, and wakes a worker for what is still queued after that.
func (g *Group) lateNotify() {
	var start time.Time
	for {
		g.lateWake.Store(false)
		if g.pending.Load() == 0 || !g.rt.anyQueued() {
			return
		}
		if g.helpers.Load() == 0 {
			break
		}
		if start.IsZero() {
			start = time.Now()
		} else if time.Since(start) > lateHelpWait {
			break
		}
		if !g.lateWake.CompareAndSwap(false, true) {
			return // a new lateNotify covers the group's injections
		}
		goruntime.Gosched()
	}
	g.rt.notify()
}

// lateHelpWait is how long lateNotify lets a waiter run its group's
// queued tasks alone: about what a worker's wake-up takes
// (BenchmarkInjectLatency's start-ns/op), so a waiter that is done within
// it wakes nobody, and longer tasks run in parallel that much later.
const lateHelpWait = 20 * time.Microsecond

// anyQueued reports whether some worker's queues hold a task.
func (rt *Runtime) anyQueued() bool {
	for _, v := range rt.workers {
		if v.hasLocalWork() {
			return true
		}
	}
	return false
}

// lend takes w off the idle stack for the calling outside goroutine,
// which then runs as w, if w is parked in its scheduler loop; it reports
// false when it is not.
func (rt *Runtime) lend(w *worker) bool {
	rt.idle.mu.Lock()
	if !w.parked || !w.lendable {
		rt.idle.mu.Unlock()
		return false
	}
	rt.removeIdle(w)
	w.wake = w.lentWake
	rt.idle.mu.Unlock()
	return true
}

// giveBack ends a lend: w parks again as park's step 3 does, without
// sleeping, and then looks: its goroutine is woken if w's own queues
// hold work (a producer that queued it relied on w's owner running,
// which the waiter was until now), if a worker that is not parked holds
// queued work while none spins (a worker that finishes its task searches
// before it parks; w's goroutine does the search), or if the runtime is
// closing (so that it exits). Work queued on a parked worker does not
// count, unlike in park's look: its producer woke a worker for it or
// left that to a lateNotify, and it is usually the waiter's own group's,
// which the waiter runs next, as that worker. Owner only: the borrower,
// with no task of its own running.
func (w *worker) giveBack() {
	rt := w.rt
	w.cnt.lent++
	w.fold() // Stats must not lag behind a parked worker
	rt.idle.mu.Lock()
	w.wake = w.home
	if rt.closing.Load() {
		rt.idle.mu.Unlock()
		w.home <- false
		return
	}
	w.parked, w.lendable = true, true
	rt.idle.stack = append(rt.idle.stack, w)
	rt.sched.addIdle(1)
	rt.idle.mu.Unlock()
	if w.hasLocalWork() || rt.queuedOnRunning(w) || rt.closing.Load() {
		rt.unpark(w) // no-op if a producer already took w off the stack
	}
}

// queuedOnRunning reports whether, with no worker spinning, a worker
// other than w that is not parked holds queued work.
func (rt *Runtime) queuedOnRunning(w *worker) bool {
	if rt.sched.spinning() != 0 {
		return false // a spinner will find it
	}
	for _, v := range rt.workers {
		if v == w || !v.hasLocalWork() {
			continue
		}
		rt.idle.mu.Lock()
		parked := v.parked
		rt.idle.mu.Unlock()
		if !parked {
			return true
		}
	}
	return false
}

// help runs g's queued tasks on the calling goroutine, an outside
// waiter: each worker that holds some at the front of its inbox and is
// parked in its scheduler loop, starting with the worker of the CPU that
// g's injections were last placed from, is lent to it in turn; it runs
// them as that worker and gives the worker back.
// Each task so runs as the worker the policy placed it on. It returns
// when g is done or it has run what it could.
func (g *Group) help() {
	rt := g.rt
	first := rt.workerOn(int(g.fromCPU.Load())) // the injector's, where tasks go first
	if first == nil {
		first = rt.workers[0]
	}
	g.helpers.Add(1)
	relabeled := false
	for i := range rt.workers {
		w := rt.workers[(first.id+i)%len(rt.workers)]
		if g.pending.Load() == 0 {
			break
		}
		if !w.inbox.frontIs(g) || !rt.lend(w) {
			continue
		}
		w.relabeled = false
		for g.pending.Load() != 0 {
			t := w.lentWork(g)
			if t == nil {
				break
			}
			w.execute(t)
		}
		relabeled = relabeled || w.relabeled
		w.giveBack()
	}
	g.helpers.Add(-1)
	if relabeled {
		// execute left the goroutine without labels (w.labels is nil):
		// give the waiter those of the context it made g with.
		pprof.SetGoroutineLabels(g.parent)
	}
}

// lentWork returns the next task for a waiter running as w on behalf of
// g: a task of g's subtree (within) that g's tasks pushed onto w's LIFO
// slot or deque, else g's task at the front of w's inbox. Anything else
// on w's deque (a task of another group that one of g's tasks left
// behind, or one that periodic balancing pulled) ends the waiter's
// help there: it goes back onto the deque, where giveBack sees it and
// wakes w's goroutine to run it. Owner only.
func (w *worker) lentWork(g *Group) *Task {
	if t := w.lifo.Swap(nil); t != nil {
		if t.within(g) {
			return t
		}
		w.dq.Push(t)
		return nil
	}
	if t := w.dq.Pop(); t != nil {
		if t.within(g) {
			return t
		}
		w.dq.Push(t) // back where it was
		return nil
	}
	if t := w.inbox.popOf(g); t != nil {
		w.countInjected(t)
		return t
	}
	return nil
}

// within reports whether t belongs to g's subtree: it is a task of g, or
// of a group that a task of g's subtree made with Ctx.Group (a Join's
// second half belongs to its forking task's group).
func (t *Task) within(g *Group) bool {
	for h := t.group; h != nil; h = h.up {
		if h == g {
			return true
		}
	}
	return false
}
