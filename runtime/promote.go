package runtime

// Lazy forks and their promotion
//
// The problem. A fork-join program forks far more often than a thief
// comes by: fib(30) forks 1.3 million times, and on two workers a handful
// of its forks are ever stolen. An eager fork (push the second half onto
// the deque, notify, pop it back at the join) costs two sequentially
// consistent stores and a load of the park word on every fork, whether
// or not any worker is there to take the work: 10–20 ns where the call
// it replaces costs 2, several times the work of a fine-grained
// recursion's call.
//
// The idea, from heartbeat scheduling (Acar, Charguéraud, Guatto, Rainey
// and Sieczkowski, PLDI 2018) and Spice (judofyr/spice): a fork is
// remembered, not published. Join records the forked half in the
// worker's own list of remembered forks (worker.forks, owner only: plain
// loads and stores), runs the first half, and at the join finds the
// second still remembered and runs it as a plain call. Only a promotion
// turns a remembered fork into a task that thieves can see: the oldest
// remembered fork (the outermost, so usually the biggest piece of work,
// which is what a thief should take) is pushed onto the deque and the
// park protocol is notified, exactly as a push does (park.go, step 1).
// Its join then takes it back from the deque or waits for the thief, as
// every join did before.
//
// When to promote: when a thief could use it. Heartbeat scheduling
// promotes at a fixed rate (every ~100 µs: a per-runtime ticker in
// Spice, a timer interrupt in the paper), which bounds the overhead but
// leaves an idle worker waiting up to a beat for work that is there.
// Lazy binary splitting (Tzannes, Caragea, Barua and Vishkin, PPoPP 2010)
// splits a loop only when the local deque is empty, the cheap local sign
// that thieves have taken what was exposed. Here a fork promotes when
// both hold: the worker's deque is empty, and some worker is spinning or
// parked (rt.sched is nonzero: the park word every push already reads).
// Every fork reads rt.sched once — an atomic load, a plain MOV on amd64
// and arm64, of a word written only when a worker starts or stops
// spinning or parking — and nothing else unless it is nonzero. While all
// workers are busy no fork pays more; on a one-worker runtime no fork is
// ever promoted. A searching worker makes the busy workers' next forks
// promote, within nanoseconds rather than a beat, and a parked one is
// woken by the promotion's notify.
//
// Back-off. A promotion that its own join takes back from the deque
// found no taker while its first half ran, and it cost the fork a push,
// a notify and a pop on cache lines that the searching worker keeps
// reading: 90–120 ns on two CPUs, against the 5 ns of a fork. A loop of
// short joins on a worker whose peer idles would pay that at every fork
// (BenchmarkEmptyJoin). So each take-back doubles the number of forks
// that then let a promotion's chance pass (1, 3, 7, … up to
// maxPromoteBackoff; tookBack), and a promotion a thief took ends the
// back-off, and each task the worker starts begins without one
// (endBackoff). The back-off is kept in promote, which a fork calls
// only while a thief could use work, so a fork with every worker busy
// pays nothing more. Promotion still takes the oldest remembered fork,
// so the first one after a back-off is as big as it would have been.
// ParallelFor's splits, made only for an idle thief, are promoted
// whatever the back-off (promoteNext).
//
// The count is of forks, not of time: no clock is read. What that
// costs: a task that, after a run of short joins nobody helped with,
// joins two halves that fork no more (or fewer times than the back-off
// has left) runs both on its worker, while eager promotion would have
// handed the second to the idle thief.
//
// Why this loses no wake-up. A remembered fork is not a queued task: it
// is part of the running task, whose worker runs it at the join whatever
// happens, so park.go's invariant (a queued task has a running owner, a
// spinner or a worker being woken) does not cover it and need not. A
// promoted fork is queued, and its promotion is a push followed by
// notify, step 1 of the protocol unchanged.
//
// Why it is race-free. worker.forks and forkBase are touched only by the
// worker's goroutine (a Ctx is valid only there), like the rest of the
// owner-only fields; rt.sched is read with sync/atomic. A remembered
// task's fields are written by its owner before the promoting push, which
// publishes them to thieves as any push does (internal/deque).
//
// Order. The list is a stack in call order: Join pushes at the fork and
// pops at the join, and nested joins (including those of tasks run while
// a join helps) finish before the enclosing one. Promotion takes the
// oldest remembered fork, so the promoted forks are always a prefix of
// the list, forks[:forkBase], and the deque holds them in the same
// order, the youngest at its bottom: the join of a promoted fork pops the
// deque exactly as an eager join did. A fork's position in the list also
// names the job object a Jobs.Join uses (jobFrames in jobs.go), and the
// list's slot past its end keeps the job the last Jobs.Join there used,
// so that the next one finds it with one load and one comparison: an
// unpromoted fork costs no bookkeeping beyond the list.
//
// Panics. No Join defers a recover (BenchmarkEmptyJoin measured a
// deferred recover in every Join at two to three times the cost of an
// empty Join; commit f95f3bb has the runs): a panic unwinds to the
// running task's Task.run, whose deferred call every task has anyway; it
// joins the forks the panic left on the list above the task's base
// (unwindForks in join.go), so every remembered or promoted half still
// runs exactly once and no promoted job is abandoned to a thief. A task
// run while a Join waits has a base of its own, so its panic stops at its
// own Task.run with the waiting Join's forks untouched.
//
// Rejected designs. (1) A ticker goroutine setting a per-worker heartbeat
// flag every 100 µs, which the next fork clears and promotes (Spice): the
// fork's test is the same one load, but the ticker wakes 10,000 times a
// second even when the runtime is idle (TestIdleRuntimeUsesNoCPU), and an
// idle worker waits up to a beat. Measured against the demand test on two
// CPUs (fib(30), Jobs, 8 processes alternating the two builds, medians of
// ratios to serial): one worker 3.51x -> 3.82x serial in thread CPU time
// (the ticker's thread shares the CPUs), two workers 1.93x -> 2.65x.
// (2) The worker's coarse clock read every k forks (a countdown, then
// time.Since): the countdown is one more load and store per fork, and a
// thief that ran out would wait for the next beat while the demand signal
// answers at the next fork; not built, as (1) already loses to demand.
// (3) Promoting the fork being made rather than the oldest (lazy task
// creation's youngest-first): the thief gets the smallest piece and comes
// back soon. (4) Making closures
// stay on the stack while remembered: a promoted fork runs on another
// goroutine's stack, so its closure must be on the heap, and escape
// analysis decides that for every call, promoted or not; Jobs carries the
// argument in a recycled job object instead and allocates nothing.

// remember records t, the second half of a Join, as w's youngest
// remembered fork and returns its index in w.forks, for forget; offer
// follows it. The caller sets t's body and group first. Owner only;
// inlined.
func (w *worker) remember(t *Task) int {
	k := w.nforks
	if f := w.forks; uint(k) < uint(len(f)) {
		f[k] = t
	} else {
		w.forks = append(f, t) // k == len(f)
	}
	w.nforks = k + 1
	w.cnt.forks++
	return k
}

// noFork marks a slot of worker.forks that holds no task: no slot is
// nil, so that Jobs.Join's fast path reads the Task.jobs of the slot
// past the list's end without a nil check. Never written.
var noFork Task

// offer promotes w's oldest remembered fork when a thief could use it:
// called after each remember. A function of its own so that both are
// inlined (a call out of line, promote's, costs most of an inlinable
// function's budget). Jobs.Join's fast path writes it out (jobs.go).
// Owner only.
func (w *worker) offer() {
	if w.rt.sched.v.Load() != 0 { // a worker spins or is parked
		w.promote()
	}
}

// forget removes w's youngest remembered fork, remembered at index k, at
// its join, and reports whether it was still only remembered (so the
// caller runs it inline); false means it was promoted and is on the
// deque or stolen. The slot keeps its pointer: the task is the caller's
// to recycle, and a Jobs job left there is found by the next Join of
// its Jobs at k (jobFrames). Owner only; inlined.
func (w *worker) forget(k int) bool {
	if w.nforks != k+1 {
		forksOutOfOrder()
	}
	w.nforks = k
	if k < w.forkBase {
		w.forkBase = k // it was promoted, and so were all older ones
		return false
	}
	return true
}

func forksOutOfOrder() {
	panic("runtime: Join: remembered forks out of order (a Ctx used outside its call?)")
}

// promote pushes w's oldest remembered fork onto its deque if the deque
// is empty, and notifies like any push (park.go, step 1), unless the
// back-off has it let this fork pass (tookBack) or w is the runtime's
// only worker (alone). A lone worker's counts can say that a worker
// spins while it runs a task: a producer that claimed the spinning slot
// to wake it (notify) holds it until it finds the idle stack empty, which
// it is when an outside waiter borrowed the worker meanwhile (lend.go),
// and nobody could take a fork promoted then. Owner only.
func (w *worker) promote() {
	if w.promoteSkip > 0 {
		w.promoteSkip--
		return
	}
	if w.forkBase == w.nforks || w.stealQ.Len() != 0 || w.alone {
		return
	}
	t := w.forks[w.forkBase]
	t.group = w.groupOf(w.forkBase)
	w.forkBase++
	t.joiner = w
	t.latch.reset()
	w.cnt.promoted++
	w.push(t) // stamps t.born, counts it spawned, notifies
}

// maxPromoteBackoff bounds the back-off of promote: at most this many
// forks pass unpromoted after a promotion that no thief took, about
// 1.3 µs of the finest forks (5 ns each), well inside the lingerFor a
// searching worker waits before it parks; a promotion taken back costs
// 90–120 ns, so a loop of short joins pays under 0.5 ns a fork for them.
const maxPromoteBackoff = 255

// tookBack records that the join of a promoted fork took it back from
// the deque: no thief took it while its first half ran, so the next
// promotions waste a push, a notify and a pop unless thieves come by
// faster. It doubles the back-off (1, 3, 7, … up to maxPromoteBackoff,
// or the runtime's Config.promoteBackoff) and lets that many of the next
// forks pass. Owner only.
func (w *worker) tookBack() {
	w.promoteBackoff = min(2*w.promoteBackoff+1, w.rt.cfg.promoteBackoff)
	w.promoteSkip = w.promoteBackoff
}

// endBackoff ends promote's back-off: a thief took a promoted fork
// (promotions pay off), or the worker starts a task (each begins without
// one), so the next fork made while a thief could use work promotes.
// Owner only.
func (w *worker) endBackoff() {
	w.promoteBackoff, w.promoteSkip = 0, 0
}

// promoteNext has the next fork made while a thief could use work
// promoted whatever the back-off, which resumes after it: a fork made
// only for the thief (ParallelFor's split). Owner only.
func (w *worker) promoteNext() {
	w.promoteSkip = 0
}

// forkSeg is one entry of worker.segs.
type forkSeg struct {
	base  int
	group *Group
}

// groupOf returns the group of the task that made remembered fork k: the
// group a promoted fork runs in. Owner only.
func (w *worker) groupOf(k int) *Group {
	for i := len(w.segs) - 1; i >= 0; i-- {
		if w.segs[i].base <= k {
			return w.segs[i].group
		}
	}
	panic("runtime: a remembered fork outside any task")
}

// wantsSplit reports whether a thief could use work split off now: some
// worker spins or is parked and w's deque is empty (lazy binary
// splitting's test, with the demand test of remember). Owner only.
func (w *worker) wantsSplit() bool {
	return w.rt.sched.v.Load() != 0 && w.stealQ.Len() == 0
}
