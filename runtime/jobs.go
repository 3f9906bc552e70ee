package runtime

import "context"

// Jobs is fork-join without allocation: a typed task body plus free lists of
// job objects, one per worker, so that Join reuses the objects of earlier
// calls instead of allocating closures. Use it for the innermost, finest
// grained recursion (a task per call of a recursive function); Ctx.Join with
// closures is simpler and costs one or two small allocations per call.
//
//	var fib *runtime.Jobs[int, int]
//	fib = runtime.NewJobs(rt, func(c *runtime.Ctx, n int) (int, error) {
//		if n < 2 {
//			return n, nil
//		}
//		a, b, err := fib.Join(c, n-1, n-2)
//		return a + b, err
//	})
//	r, err := fib.Run(ctx, 30)
//
// fn should capture nothing that changes per call: its argument and result
// travel in the job object.
type Jobs[A, R any] struct {
	rt   *Runtime
	fn   func(*Ctx, A) (R, error)
	free []jobFree[A, R] // by worker id; each list owner only
}

// jobFree is one worker's free list, padded so two workers' lists do not
// share a cache line.
type jobFree[A, R any] struct {
	list []*job[A, R]
	_    [104]byte
}

// job is one Join's second half: the task the deque holds, its argument
// and, once it ran, its result.
type job[A, R any] struct {
	t    Task
	jobs *Jobs[A, R]
	arg  A
	res  R
}

// runJob runs the job's body for a thief (Task.run calls it).
func (j *job[A, R]) runJob(c *Ctx) error {
	var err error
	j.res, err = j.jobs.fn(c, j.arg)
	return err
}

// NewJobs returns a Jobs running fn on rt's workers.
func NewJobs[A, R any](rt *Runtime, fn func(*Ctx, A) (R, error)) *Jobs[A, R] {
	return &Jobs[A, R]{rt: rt, fn: fn, free: make([]jobFree[A, R], len(rt.workers))}
}

// Join runs fn(c, a) and fn(c, b), potentially in parallel, exactly as
// Ctx.Join does, and returns both results and the first error (a panic in
// either becomes a *PanicError). c must be the Ctx of a task of the same
// runtime.
func (js *Jobs[A, R]) Join(c *Ctx, a, b A) (ra, rb R, err error) {
	w := c.w
	fl := &js.free[w.id].list
	var j *job[A, R]
	if n := len(*fl); n > 0 {
		j = (*fl)[n-1]
		*fl = (*fl)[:n-1]
	} else {
		j = &job[A, R]{jobs: js}
		j.t.r = j
		j.t.join = true
	}
	j.arg = b
	// The fork and take-back below repeat Ctx.Join's on purpose: shared as
	// helpers, which the compiler does not inline, they cost about 3 ns
	// (13%) more per spawn+join (BenchmarkSpawnJoin).
	j.t.group, j.t.joiner = c.t.group, w
	j.t.latch.reset()
	j.t.born = w.now
	w.cnt.spawned++
	w.dq.Push(&j.t)
	w.rt.notify()

	errA := callJob(c, js.fn, a, &ra)

	var errB error
	for {
		p := w.dq.Pop()
		if p == &j.t {
			errB = callJob(c, js.fn, b, &rb)
			break
		}
		if p == nil {
			c.waitLatch(&j.t)
			rb, errB = j.res, j.t.err
			break
		}
		w.execute(p)
	}
	var zeroA A
	var zeroR R
	j.arg, j.res, j.t.err, j.t.group, j.t.joiner = zeroA, zeroR, nil, nil, nil
	*fl = append(*fl, j)
	return ra, rb, firstErr(errA, errB)
}

// Run runs fn(arg) as a task on the runtime from outside the workers and
// waits for its result.
func (js *Jobs[A, R]) Run(ctx context.Context, arg A) (R, error) {
	var r R
	err := js.rt.Go(ctx, func(c *Ctx) error {
		var err error
		r, err = js.fn(c, arg)
		return err
	}).Wait()
	return r, err
}

// callJob runs fn inline, turning a panic into an error. recover is called
// only when fn did not return, so the common path pays for no gorecover.
func callJob[A, R any](c *Ctx, fn func(*Ctx, A) (R, error), arg A, res *R) (err error) {
	done := false
	defer func() {
		if !done {
			err = newPanicError(recover())
		}
	}()
	*res, err = fn(c, arg)
	done = true
	return err
}
