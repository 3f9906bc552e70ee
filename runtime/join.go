package runtime

import (
	goruntime "runtime"
	"time"
)

// Join runs a and b, potentially in parallel, and returns when both are
// done: the first non-nil of a's and b's errors. b is remembered, not
// published (promote.go): a runs at once, and unless a thief could use b
// meanwhile (some worker searching or parked while this worker's deque is
// empty, and this worker's promotions are not backing off after ones
// that nobody took), b then runs as a plain call on this Ctx. A promoted b is on the
// deque: this worker takes it back if no thief did, else helps with other
// work until the thief finishes it. Both see the caller's Ctx when run
// here; a stolen b gets its own. A nil a or b does nothing.
//
// Panics. A panic in a or b, or in any Join below them, is a panic of the
// running task's body, as in a plain call: it unwinds the goroutine's
// frames, deferred calls included, past this Join (which does not return)
// up to the running task (a stolen half runs as a task of its own), which
// recovers it: it joins every fork the panic left behind, running each
// second half that has not run, so that every half still runs exactly
// once, and the task ends with the panic as a *PanicError, its Wait's
// error. A panic in a stolen half is recovered on the thief and raised
// again by this Join once both halves are done, so it ends this task the
// same way. No Join defers a recover: the task's own deferred call, which
// every task has, serves all its Joins, and a Join costs the same at any
// depth. So do not recover a panic between a Join and its task: the forks
// it skipped are still open when the body returns, and the task then runs
// them and fails with an error that says so (a recover inside a half makes
// the Join above it panic with the forks out of order).
//
// Closures that capture variables escape to the heap here, because b may
// run on another goroutine: the closure form costs an allocation or two
// per call. Jobs carries its argument in a recycled job object instead
// and allocates nothing.
func (c *Ctx) Join(a, b Func) error {
	w := c.w
	t := w.newTask()
	t.Fn, t.join = b, true // its group is set if it is promoted (promote)
	k := w.remember(t)
	w.offer()

	var errA error
	if a != nil {
		errA = a(c)
	}

	if w.forget(k) {
		t.Fn, t.join = nil, false
		w.free = append(w.free, t) // only these were set: t is clean again
		if b == nil {
			return errA
		}
		return firstErr(errA, b(c))
	}
	// Promoted: take b back unless it was stolen. Tasks that a spawned
	// without waiting for them sit above b in the deque: run them first.
	for {
		p := w.dq.Pop()
		if p == t {
			w.tookBack()
			var errB error
			if b != nil {
				errB = b(c)
			}
			w.freeTask(t)
			return firstErr(errA, errB)
		}
		if p == nil {
			break // stolen
		}
		w.execute(p)
	}
	w.endBackoff() // a thief took t
	c.waitLatch(t)
	errB, rethrow := t.err, t.panicked
	w.freeTask(t)
	if rethrow {
		panic(errB) // the thief's *PanicError, on to this task (Panics above)
	}
	return firstErr(errA, errB)
}

// unwindForks joins the forks above base on w's list that a panic left
// behind, youngest first, as their Joins would have: a remembered one
// runs here, a promoted one is taken back from the deque and run, or
// waited for (helping) if a thief has it. Results and errors are dropped
// (the panic is the task's error), and so are the panics of the halves
// run here; a panic there leaves forks of its own above base, which the
// loop joins in turn. Task.run calls it after a panic in its body.
// Owner only.
func (w *worker) unwindForks(c *Ctx, base int) {
	for w.nforks > base {
		k := w.nforks - 1
		t := w.forks[k]
		promoted := !w.forget(k)
		if t.r != nil {
			// The halves run here fork at position k too: their Joins
			// must not reuse t's job while it is joined here.
			t.r.detach(w)
		}
		if promoted {
			for {
				p := w.dq.Pop()
				if p == t {
					c.runLost(t)
					break
				}
				if p == nil {
					c.waitLatch(t) // stolen
					break
				}
				w.execute(p)
			}
		} else {
			c.runLost(t)
		}
		if t.r != nil {
			t.r.release(w)
		} else {
			w.freeTask(t)
		}
	}
}

// runLost runs the body of t, a fork whose Join a panic unwound, and drops
// its error and any panic of its own.
func (c *Ctx) runLost(t *Task) {
	defer func() { _ = recover() }()
	switch {
	case t.r != nil:
		_ = t.r.runJob(c)
	case t.Fn != nil:
		_ = t.Fn(c)
	}
}

// waitLatch helps with other work until the stolen Join job t finishes.
func (c *Ctx) waitLatch(t *Task) {
	w := c.w
	w.depth++
	defer func() { w.depth-- }()
	for spins := 0; !t.latch.isSet(); {
		if p := w.findWork(); p != nil {
			w.execute(p)
			spins = 0
			continue
		}
		if spins++; spins < 16 {
			goruntime.Gosched()
			continue
		}
		// Park until the thief's finish unparks us (rt.finish reads
		// joiner before setting the latch, then unparks).
		w.park(t.latch.isSet)
	}
	w.leaveHelping()
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// ParallelFor calls fn over [lo, hi) in chunks, in parallel, and returns
// the first error; every chunk runs even after one fails. Chunks not yet
// started when the task's group is canceled are skipped and reported as
// that error.
//
// A grain > 0 bounds the chunks to at most grain indices. A grain <= 0
// lets ParallelFor choose: it starts with one index and doubles the chunk
// while a chunk takes less than half of autoChunkTime, halving it when one
// takes more than twice that, so that the cost of a chunk is amortized
// over tens of microseconds of work whatever an index costs, while a
// chunk stays short enough that an idle worker does not wait long for the
// next split.
//
// It splits lazily (lazy binary splitting, Tzannes et al., PPoPP 2010;
// promote.go): it runs chunk after chunk as a plain loop, and before each
// one, if a thief could use work (some worker searching or parked while
// this worker's deque is empty) and more than one chunk is left, it splits
// the rest in halves with Join, whose promotion hands one half to the
// thief; each half goes on with the chunk size reached. A loop nobody
// helps with costs no fork at all.
func (c *Ctx) ParallelFor(lo, hi, grain int, fn func(c *Ctx, lo, hi int) error) error {
	if grain > 0 {
		return c.parallelFor(lo, hi, grain, false, fn)
	}
	return c.parallelFor(lo, hi, 1, true, fn)
}

// autoChunkTime is the wall time a chunk of a ParallelFor with grain <= 0
// aims at; chunks take between half and twice it. Long enough to amortize
// what a chunk costs beyond its indices: the clock read (20–80 ns), the
// split test and the call of fn, and in a loop bound by memory bandwidth
// far more (BenchmarkParallelForGrain's sum of 100M int64 runs 0.25–1 µs
// longer per chunk with fixed grains of 4Ki to 64Ki indices, 1–2.5% of a
// 40 µs chunk; docs/BENCHMARKS.md, "ParallelFor's grain"). Short enough
// that a worker that runs out of work waits at most one chunk, under two
// lingers (lingerFor), for the split that feeds it, and that a loop of a
// millisecond still comes in about 25 chunks to split between workers.
const autoChunkTime = 40 * time.Microsecond

// parallelFor is ParallelFor with chunks of chunk indices, adapted to
// autoChunkTime if adapt is set.
func (c *Ctx) parallelFor(lo, hi, chunk int, adapt bool, fn func(c *Ctx, lo, hi int) error) error {
	var first error
	var last int64
	if adapt {
		last = c.w.clock()
	}
	for lo < hi {
		if err := c.Err(); err != nil {
			return firstErr(first, err)
		}
		if hi-lo > chunk && c.w.wantsSplit() {
			c.w.promoteNext() // this split is for the thief
			mid := lo + (hi-lo)/2
			err := c.Join(
				func(c *Ctx) error { return c.parallelFor(lo, mid, chunk, adapt, fn) },
				func(c *Ctx) error { return c.parallelFor(mid, hi, chunk, adapt, fn) },
			)
			return firstErr(first, err)
		}
		end := hi
		if hi-lo > chunk {
			end = lo + chunk
		}
		if err := fn(c, lo, end); err != nil && first == nil {
			first = err
		}
		lo = end
		if adapt {
			now := c.w.clock()
			switch d := time.Duration(now - last); {
			case d < autoChunkTime/2 && chunk <= (hi-lo)/2:
				chunk *= 2
			case d > 2*autoChunkTime && chunk > 1:
				chunk /= 2
			}
			last = now
		}
	}
	return first
}
