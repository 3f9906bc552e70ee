package runtime

import "sync"

// Worker parking and unparking
//
// The problem (the same as Go's, see "Worker thread parking/unparking" in
// src/runtime/proc.go): keep enough workers awake to use the available
// parallelism, and park the rest so an idle runtime burns no CPU, while
// never leaving a task queued with every worker asleep (a lost wake-up),
// and without a system call on every spawn.
//
// Rejected designs. (1) Wake a worker on every spawn: a futex wake per
// task makes a fine-grained fork-join program slower than serial, and
// most woken workers find nothing because the spawner's thieves already
// took the work. (2) Centralised idle state consulted under a lock on
// every spawn: serialises the hot path. (3) Workers that never park but
// spin with backoff: an idle runtime then costs CPU forever, and a
// parallel build shares the machine with the compilers it starts. (4)
// Park in futex(2) on a word of the worker's own: the wake-up reaches the
// pinned thread directly, about a quarter of the channel's latency (a
// parked worker's token goes to its goroutine, locked to its thread,
// through Go's scheduler: BenchmarkWakeLatency), but a thread asleep in
// a system call keeps its P until sysmon retakes it, up to 10 ms later,
// and every other goroutine of the program may wait for a P meanwhile.
//
// The protocol, after Go's spinning-M rule. A worker is running, spinning
// (searching other workers' queues, counted in nSpinning) or parked (in
// rt.idle, counted in nIdle); the two counts are the halves of one word,
// rt.sched (sched.go), so that every load of it sees both at one instant.
//
//  1. A producer (push to a deque or the LIFO slot, inject into an inbox)
//     first publishes the task, then calls notify, which loads nSpinning
//     and nIdle. If a worker is spinning it does nothing: the spinner will
//     find the task. If none spins and one is parked, it makes exactly one
//     parked worker a spinner (CAS nSpinning 0→1, then unpark). An
//     injection from outside the workers calls notify late, from a
//     goroutine of its own, so that a waiter may run its tasks first
//     (lend.go): the load still comes after the publish.
//  2. A spinner that finds work stops spinning; if it was the last
//     spinner it wakes another (notify again), so the ramp-up continues
//     while there may be more work — Go's resetspinning.
//  3. A spinner that finds nothing stops spinning by decrementing
//     nSpinning, and only then looks at every queue once more (in park,
//     before and after publishing itself as parked). If it sees work it
//     becomes a spinner again instead of parking; if the work is in its
//     own queues it runs it instead, and that is step 2 again: the
//     producers that saw it spinning relied on it, possibly for more than
//     the one task it will now run (tasks injected into its inbox while it
//     searched elsewhere), so it wakes another spinner if none is left.
//  4. At most half of the busy workers spin: a worker starts spinning
//     only if 2*nSpinning < workers − nIdle (Go's findRunnable rule),
//     except as in 3, when it has just seen work. The test and the claim
//     are one CAS on rt.sched, so the rule holds exactly when a worker
//     starts spinning (Go tests and claims in separate steps); afterwards
//     busy workers may park under the spinners for the length of a search.
//
// The invariant: whenever a task is queued, either its owner is running
// (a worker lent to an outside waiter counts: its owner is the waiter;
// lend.go), or some worker is spinning, or a parked worker is being woken
// or will be by a pending late notify. Step 1's
// publish-then-load and step 3's decrement-then-look are both sequentially
// consistent (all sync/atomic operations are, and the inbox uses a
// mutex), so for a producer P and a stopping spinner S at least one of them
// sees the other's write: either P sees S still counted and relies on S,
// whose final look then sees P's task; or S's look misses the task, so P's
// load comes after S's decrement and P sees nSpinning drop (and S parked
// or about to be, counted in nIdle before S's final look), and wakes it.
//
// A helping Wait parks through the same path with a stop condition (its
// group is done); the task that ends the group unparks the waiter
// directly (group.go), so the waiter does not depend on new work arriving.

// idleSet is the stack of parked workers (LIFO, so a recently parked
// worker with a warm cache is woken first).
type idleSet struct {
	mu    sync.Mutex
	stack []*worker
}

func (s *idleSet) init(n int) { s.stack = make([]*worker, 0, n) }

// notify is step 1 of the protocol: called after publishing a task. Any
// goroutine.
func (rt *Runtime) notify() {
	if s, idle := rt.sched.load(); s != 0 || idle == 0 {
		return
	}
	if !rt.sched.casSpinning(0, 1) {
		return // another producer is waking one
	}
	if !rt.wakeOne(true) {
		rt.sched.addSpinning(-1)
	}
}

// wakeOne unparks the most recently parked worker, handing it a spinning
// slot if asSpinner. It reports false when no worker is parked.
func (rt *Runtime) wakeOne(asSpinner bool) bool {
	rt.idle.mu.Lock()
	n := len(rt.idle.stack)
	if n == 0 {
		rt.idle.mu.Unlock()
		return false
	}
	w := rt.idle.stack[n-1]
	rt.idle.stack = rt.idle.stack[:n-1]
	w.parked = false
	rt.sched.addIdle(-1)
	ch := w.wake
	rt.idle.mu.Unlock()
	ch <- asSpinner
	return true
}

// unpark wakes w if it is parked (used to end a helping Wait).
func (rt *Runtime) unpark(w *worker) {
	rt.idle.mu.Lock()
	if !w.parked {
		rt.idle.mu.Unlock()
		return
	}
	rt.removeIdle(w)
	ch := w.wake
	rt.idle.mu.Unlock()
	ch <- false
}

// removeIdle takes w out of the idle stack. rt.idle.mu must be held.
func (rt *Runtime) removeIdle(w *worker) {
	for i, v := range rt.idle.stack {
		if v == w {
			rt.idle.stack = append(rt.idle.stack[:i], rt.idle.stack[i+1:]...)
			break
		}
	}
	w.parked = false
	rt.sched.addIdle(-1)
}

// wakeAll unparks every worker (Close).
func (rt *Runtime) wakeAll() {
	rt.idle.mu.Lock()
	ws := append([]*worker(nil), rt.idle.stack...)
	chs := make([]chan bool, len(ws))
	for i, w := range ws {
		rt.removeIdle(w)
		chs[i] = w.wake
	}
	rt.idle.mu.Unlock()
	for _, ch := range chs {
		ch <- false
	}
}

// leaveHelping ends a helping wait (Ctx.Wait, a stolen Join's wait): the
// task goes on, so w must not stay counted as a spinner, which it is when
// its last search failed, or when it was woken as a spinner, just as what
// it waited for finished. It is a spinner that found nothing, so step 3:
// decrement, then look, and if it was the last spinner and work is
// visible (a producer that saw it spinning relied on it), wake another.
// Without this the task would run on as a phantom spinner (about 1 wait in
// 1000 ends so; TestHelpingWaitReturnsNotSpinning), and producers would
// wake nobody meanwhile. The wake-ups it restores cost empty-task
// fork-join on two workers (BenchmarkSpawnJoinAll) about 20%; tasks that do
// work (the fib benchmarks of package bench) do not notice. Owner only.
func (w *worker) leaveHelping() {
	if !w.spinning {
		return
	}
	w.spinning = false
	if w.rt.sched.addSpinning(-1) == 0 && w.rt.workVisible(w) {
		w.rt.notify()
	}
}

// stopSpinning is step 2. Owner only.
func (w *worker) stopSpinning() {
	w.spinning = false
	if w.rt.sched.addSpinning(-1) == 0 {
		w.rt.notify()
	}
}

// workVisible reports whether a parking worker must not sleep: its own
// queues hold work, or no worker spins and some queue anywhere holds work.
func (rt *Runtime) workVisible(w *worker) bool {
	if w.hasLocalWork() {
		return true
	}
	if rt.sched.spinning() != 0 {
		return false // a spinner will find it (invariant, case "S still counted")
	}
	for _, v := range rt.workers {
		if v.hasLocalWork() {
			return true
		}
	}
	return false
}

// park is step 3: stop spinning, look once more, publish ourselves as
// parked, look again, and sleep until woken. stop is checked under the idle
// lock and again after publishing; when it holds the worker does not sleep
// (the scheduler loop's "runtime closing", a helping Wait's "group done").
// Owner only.
func (w *worker) park(stop func() bool) {
	rt := w.rt
	wasSpinning := w.spinning
	if w.spinning {
		w.spinning = false
		rt.sched.addSpinning(-1)
	}
	w.fold()
	if rt.workVisible(w) {
		// Become a spinner again. workVisible saw no spinner (or work of
		// our own), so the half rule allows one: the CAS keeps it at one
		// when several parking workers see the same work at once.
		// Look at our own queues once: a thief may empty them between
		// two looks, and w.spinning must match the CAS exactly.
		if local := w.hasLocalWork(); local || rt.sched.casSpinning(0, 1) {
			w.spinning = !local
			if local && wasSpinning {
				// A spinner that found work, like step 2: producers that
				// saw us spinning (work injected into our own inbox while
				// we searched elsewhere, say) relied on us, and we are
				// about to run one task, possibly for a long time, while
				// the rest waits. Wake another spinner if none is left
				// (Go's resetspinning).
				rt.notify()
			}
			return
		}
	}
	ch := w.wake // ours: nobody changes it while we run as w
	rt.idle.mu.Lock()
	if stop() {
		rt.idle.mu.Unlock()
		return
	}
	// Count and fold before publishing: once we are on the stack, an
	// outside waiter may borrow w (lend.go) and run as w, so until the
	// token arrives we touch nothing of w's but its shared fields.
	w.cnt.parks++
	w.fold() // Stats must not lag behind a parked worker
	w.parked = true
	// Only a worker goroutine parked in its scheduler loop, with no task
	// on its stack, is lent.
	w.lendable = w.depth == 0 && ch == w.home
	rt.idle.stack = append(rt.idle.stack, w)
	rt.sched.addIdle(1)
	rt.idle.mu.Unlock()

	// Look again now that nIdle counts us: a producer that published work
	// before our increment is seen here; one after it sees us in nIdle.
	if rt.workVisible(w) || stop() {
		rt.unpark(w) // no-op if a producer already took us off the stack
	}
	if asSpinner := <-ch; asSpinner {
		w.spinning = true
	}
	w.cnt.wakeups++
}
