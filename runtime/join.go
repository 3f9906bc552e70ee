package runtime

import goruntime "runtime"

// Join runs a and b, potentially in parallel, and returns when both are
// done: the first non-nil of a's and b's errors (a panic in either becomes
// a *PanicError). It is the cheapest fork-join: b is pushed onto this
// worker's deque and a runs at once; if no thief took b meanwhile, this
// worker pops it back and runs it inline (no synchronisation beyond the
// deque's), else it helps with other work until the thief finishes b.
// Both see the caller's Ctx when run here; a stolen b gets its own.
func (c *Ctx) Join(a, b Func) error {
	w := c.w
	t := w.newTask()
	t.Fn, t.group, t.join, t.joiner = b, c.t.group, true, w
	t.latch.reset()
	t.born = w.now
	w.cnt.spawned++
	w.dq.Push(t)
	w.rt.notify()

	errA := c.call(a)

	// Take b back unless it was stolen. Tasks that a spawned without
	// waiting for them sit above b in the deque: run them first.
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

// ParallelFor calls fn over [lo, hi) split into chunks of at most grain
// indices (grain < 1 means 1), in parallel by recursive halving with Join,
// and returns the first error. Chunks not yet started when the task's group
// is canceled are skipped and reported as that error.
func (c *Ctx) ParallelFor(lo, hi, grain int, fn func(c *Ctx, lo, hi int) error) error {
	if grain < 1 {
		grain = 1
	}
	if hi <= lo {
		return nil
	}
	if err := c.Err(); err != nil {
		return err
	}
	if hi-lo <= grain {
		return fn(c, lo, hi)
	}
	mid := lo + (hi-lo)/2
	return c.Join(
		func(c *Ctx) error { return c.ParallelFor(lo, mid, grain, fn) },
		func(c *Ctx) error { return c.ParallelFor(mid, hi, grain, fn) },
	)
}
