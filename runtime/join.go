package runtime

import goruntime "runtime"

// Join runs a and b, potentially in parallel, and returns when both are
// done: the first non-nil of a's and b's errors (a panic in either becomes
// a *PanicError). b is remembered, not published (promote.go): a runs at
// once, and unless a thief could use b meanwhile (some worker searching
// or parked while this worker's deque is empty), b then runs as a plain
// call on this Ctx. A promoted b is on the deque: this worker takes it
// back if no thief did, else helps with other work until the thief
// finishes it. Both see the caller's Ctx when run here; a stolen b gets
// its own.
//
// Closures that capture variables escape to the heap here, because b may
// run on another goroutine: the closure form costs an allocation or two
// per call. Jobs carries its argument in a recycled job object instead
// and allocates nothing.
func (c *Ctx) Join(a, b Func) error {
	w := c.w
	t := w.newTask()
	t.Fn, t.group, t.join = b, c.t.group, true
	w.remember(t)

	errA := c.call(a)

	if w.forget(t) {
		t.Fn, t.group, t.join = nil, nil, false
		w.free = append(w.free, t) // only these were set: t is clean again
		return firstErr(errA, c.call(b))
	}
	// Promoted: take b back unless it was stolen. Tasks that a spawned
	// without waiting for them sit above b in the deque: run them first.
	for {
		p := w.dq.Pop()
		if p == t {
			errB := c.call(b)
			w.freeTask(t)
			return firstErr(errA, errB)
		}
		if p == nil {
			break // stolen
		}
		w.execute(p)
	}
	c.waitLatch(t)
	errB := t.err
	w.freeTask(t)
	return firstErr(errA, errB)
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

// call runs fn inline on the caller's Ctx, turning a panic into an error.
func (c *Ctx) call(fn Func) (err error) {
	if fn == nil {
		return nil
	}
	done := false
	defer func() {
		if !done { // recover only on a panic; see Task.run
			err = newPanicError(recover())
		}
	}()
	err = fn(c)
	done = true
	return err
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// ParallelFor calls fn over [lo, hi) in chunks of at most grain indices
// (grain < 1 means 1), in parallel, and returns the first error; every
// chunk runs even after one fails. Chunks not yet started when the task's
// group is canceled are skipped and reported as that error.
//
// It splits lazily (lazy binary splitting, Tzannes et al., PPoPP 2010;
// promote.go): it runs chunk after chunk as a plain loop, and before each
// one, if a thief could use work (some worker searching or parked while
// this worker's deque is empty), it splits the rest in halves with Join,
// whose promotion hands one half to the thief. A loop nobody helps with
// costs no fork at all.
func (c *Ctx) ParallelFor(lo, hi, grain int, fn func(c *Ctx, lo, hi int) error) error {
	if grain < 1 {
		grain = 1
	}
	var first error
	for lo < hi {
		if err := c.Err(); err != nil {
			return firstErr(first, err)
		}
		if hi-lo > grain && c.w.wantsSplit() {
			mid := lo + (hi-lo)/2
			err := c.Join(
				func(c *Ctx) error { return c.ParallelFor(lo, mid, grain, fn) },
				func(c *Ctx) error { return c.ParallelFor(mid, hi, grain, fn) },
			)
			return firstErr(first, err)
		}
		end := hi
		if hi-lo > grain {
			end = lo + grain
		}
		if err := fn(c, lo, end); err != nil && first == nil {
			first = err
		}
		lo = end
	}
	return first
}
