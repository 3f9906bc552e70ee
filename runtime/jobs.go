package runtime

import "context"

// Jobs is fork-join without allocation: a typed task body plus job
// objects, per worker, one for each nesting depth of this Jobs' Joins on
// the worker's stack, reused by every Join at that depth instead of
// allocating closures. Use it for the innermost, finest grained recursion
// (a task per call of a recursive function): an unpromoted Join
// (promote.go) is a few plain stores and two calls of fn. Ctx.Join with
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
	rt    *Runtime
	fn    func(*Ctx, A) (R, error)
	local []jobFrames[A, R] // by worker id; each owner only
}

// jobFrames is one worker's job objects: the Join running at nesting
// depth d of this Jobs on the worker's stack uses frames[d], free again
// once that Join returns (a promoted job is waited for before). Padded so
// two workers' entries do not share a cache line.
type jobFrames[A, R any] struct {
	frames []*job[A, R]
	depth  int
	_      [96]byte
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
	return &Jobs[A, R]{rt: rt, fn: fn, local: make([]jobFrames[A, R], len(rt.workers))}
}

// grow adds a job object for a new deepest nesting level.
func (f *jobFrames[A, R]) grow(js *Jobs[A, R]) {
	j := &job[A, R]{jobs: js}
	j.t.r = j
	j.t.join = true
	f.frames = append(f.frames, j)
}

// Join runs fn(c, a) and fn(c, b), potentially in parallel, exactly as
// Ctx.Join does, and returns both results and the first error (a panic in
// either becomes a *PanicError). c must be the Ctx of a task of the same
// runtime.
func (js *Jobs[A, R]) Join(c *Ctx, a, b A) (ra, rb R, err error) {
	w := c.w
	f := &js.local[w.id]
	d := f.depth
	if d == len(f.frames) {
		f.grow(js)
	}
	j := f.frames[d]
	f.depth = d + 1
	j.arg = b
	j.t.group = c.t.group
	// The fork and join repeat Ctx.Join's on purpose: shared as helpers,
	// which the compiler does not inline, they cost a few ns per fork,
	// more than the rest of an unpromoted one.
	w.remember(&j.t)

	// One deferred recover covers both halves run here: a defer for each
	// (callJob) cost about 8 ns per Join, as much as the rest of fib's.
	// state says which half panicked.
	state := joinRunningA
	var errA error
	defer func() {
		if state != joinDone {
			err = js.recovered(c, j, b, state, newPanicError(recover()), errA, &rb)
			f.depth = d
		}
	}()
	ra, errA = js.fn(c, a)

	var errB error
	if w.forget(&j.t) {
		state = joinRunningB
		rb, errB = js.fn(c, b)
	} else {
		state = joinWaiting
		rb, errB = js.joinPromoted(c, j, b)
	}
	state = joinDone
	var zeroA A
	j.arg, j.t.group = zeroA, nil
	f.depth = d
	return ra, rb, firstErr(errA, errB)
}

// Where a Jobs.Join is, for its deferred recover.
const (
	joinRunningA = iota // fn(a) runs; b is remembered or promoted
	joinRunningB        // b was forgotten and fn(b) runs inline
	joinWaiting         // b was promoted; joinPromoted recovers its own panics
	joinDone
)

// recovered finishes a Join whose half panicked with pe (state says
// which) and returns the Join's error: pe, or a's error when b panicked
// after a failed. When a panicked, b still runs here or is waited for,
// so the job is free again when Join returns.
func (js *Jobs[A, R]) recovered(c *Ctx, j *job[A, R], b A, state int, pe *PanicError, errA error, rb *R) error {
	var err error
	switch state {
	case joinRunningA:
		errA = pe
		if c.w.forget(&j.t) {
			err = callJob(c, js.fn, b, rb)
		} else {
			*rb, err = js.joinPromoted(c, j, b)
		}
	case joinRunningB:
		err = pe
	default:
		panic("runtime: Jobs.Join: panic while joining a promoted job: " + pe.Error())
	}
	var zeroA A
	j.arg, j.t.group = zeroA, nil
	return firstErr(errA, err)
}

// joinPromoted finishes the Join of a promoted job j: runs b here if j
// is still on the deque, else waits (helping) for the thief.
func (js *Jobs[A, R]) joinPromoted(c *Ctx, j *job[A, R], b A) (rb R, err error) {
	w := c.w
	for {
		p := w.dq.Pop()
		if p == &j.t {
			err = callJob(c, js.fn, b, &rb)
			break
		}
		if p == nil {
			c.waitLatch(&j.t)
			rb, err = j.res, j.t.err
			break
		}
		w.execute(p)
	}
	var zeroR R
	j.res, j.t.err, j.t.joiner = zeroR, nil, nil
	return rb, err
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
