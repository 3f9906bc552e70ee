package runtime

import (
	"context"
	"unsafe"
)

// Jobs is fork-join without allocation: a typed task body plus job
// objects, per worker, one for each position in the worker's list of
// remembered forks, reused by every Join there instead of allocating
// closures. Use it for the innermost, finest grained recursion (a task
// per call of a recursive function): an unpromoted Join (promote.go) is a
// few plain loads and stores and two calls of fn. Ctx.Join with closures
// is simpler and costs one or two small allocations per call.
//
// A Join still costs a few nanoseconds, one to two calls of fib: fib
// with a Join per call runs about 1.8 to 2.0 times as long as its serial
// recursion on one worker (BenchmarkFibFloor). Below some size, call the
// serial function instead (a leaf cutoff, as Cilk's and Spice's users
// write): with n < 12 calling the serial fib, fib(30) runs within a few
// percent of the serial recursion on one worker.
//
//	var fib *runtime.Jobs[int, int]
//	fib = runtime.NewJobs(rt, func(c *runtime.Ctx, n int) (int, error) {
//		if n < 12 {
//			return fibSerial(n), nil
//		}
//		a, b, err := fib.Join(c, n-1, n-2)
//		return a + b, err
//	})
//	r, err := fib.Run(ctx, 30)
//
// fn should capture nothing that changes per call: its argument and result
// travel in the job object. A job keeps the second argument of the last
// unpromoted Join that used it until the next Join reuses it (clearing it
// would cost every Join a store that only a thief would need).
type Jobs[A, R any] struct {
	rt    *Runtime
	fn    func(*Ctx, A) (R, error)
	local []jobFrames[A, R] // by worker id; each owner only
}

// jobFrames is one worker's job objects, indexed by the position in the
// worker's list of remembered forks (worker.forks) that a Join of this
// Jobs takes: frames[k] is used by the Join whose fork is k-th on the
// list, from its fork until its join, and free again once that fork is
// forgotten, because its second half then runs as a plain call with its
// argument in hand. A promoted job that the joiner must wait for leaves
// its slot to a new job (detach), since other tasks the joiner runs
// meanwhile fork at the same position. nil entries are made on first
// use. Padded so two workers' entries do not share a cache line.
//
// Join finds its job here only on its slow path: the list itself keeps,
// in its slot k past its end, the job the last fork at position k used,
// and a Join that finds its own Jobs' job there (Task.jobs) takes it
// without this lookup (Join's fast path). Whatever else forks at k (a
// Ctx.Join, another Jobs) overwrites that slot, and the next Join of
// this Jobs there fetches its job from frames again.
type jobFrames[A, R any] struct {
	frames []*job[A, R]
	_      [104]byte
}

// job is one Join's second half: the task the deque holds, its argument
// and, once it ran on a thief, its result.
type job[A, R any] struct {
	t    Task
	jobs *Jobs[A, R]
	fn   func(*Ctx, A) (R, error) // jobs.fn, one load closer for Join's second call
	k    int                      // its index in jobs.local[w].frames of the worker that made it
	arg  A
	res  R
}

// runJob runs the job's body (Task.run calls it for a thief, and
// unwindForks for a fork a panic left behind).
func (j *job[A, R]) runJob(c *Ctx) error {
	var err error
	j.res, err = j.jobs.fn(c, j.arg)
	return err
}

// release clears a job whose Join is over, so that it holds no argument
// or result alive.
func (j *job[A, R]) release(*worker) {
	var zeroA A
	var zeroR R
	j.arg, j.res, j.t.group, j.t.err, j.t.joiner, j.t.panicked = zeroA, zeroR, nil, nil, nil, false
}

// detach gives j's slot in w's frames to a new job, for a promoted j
// that w is about to wait for (jobFrames).
func (j *job[A, R]) detach(w *worker) {
	if f := j.jobs.local[w.id].frames; j.k < len(f) && f[j.k] == j {
		f[j.k] = nil
	}
	if j.k < len(w.forks) && w.forks[j.k] == &j.t {
		w.forks[j.k] = &noFork
	}
}

// attach puts j back in its slot of w's frames if no new job took it.
func (j *job[A, R]) attach(w *worker) {
	if f := j.jobs.local[w.id].frames; j.k < len(f) && f[j.k] == nil {
		f[j.k] = j
		if w.nforks == j.k && j.k < len(w.forks) {
			w.forks[j.k] = &j.t
		}
	}
}

// NewJobs returns a Jobs running fn on rt's workers.
func NewJobs[A, R any](rt *Runtime, fn func(*Ctx, A) (R, error)) *Jobs[A, R] {
	return &Jobs[A, R]{rt: rt, fn: fn, local: make([]jobFrames[A, R], len(rt.workers))}
}

// newFrame makes the job at position k of w's frames.
func (js *Jobs[A, R]) newFrame(w *worker, k int) *job[A, R] {
	f := &js.local[w.id]
	if k >= len(f.frames) {
		f.frames = append(f.frames, make([]*job[A, R], k+1-len(f.frames))...)
	}
	j := &job[A, R]{jobs: js, fn: js.fn, k: k}
	j.t.r, j.t.jobs = j, unsafe.Pointer(js)
	j.t.join = true
	f.frames[k] = j
	return j
}

// Join runs fn(c, a) and fn(c, b), potentially in parallel, exactly as
// Ctx.Join does, and returns both results and the first error. A panic in
// either half, or anywhere below it, ends the running task with it as a
// *PanicError once every fork on the way has been joined; see Ctx.Join.
// c must be the Ctx of a task of the same runtime.
//
//go:nosplit
func (js *Jobs[A, R]) Join(c *Ctx, a, b A) (ra, rb R, err error) {
	// No stack check of its own (go:nosplit: a fork of fib, Join and the
	// body's two calls, takes 88 instructions with it, 91 without): the
	// frame is small and every function Join calls checks its own,
	// which the linker verifies for nosplit chains. Join's own
	// instructions are then no point of asynchronous preemption; those of
	// the halves it calls are.
	//
	// The fast path: the job the last fork at this position of w's list
	// left in the slot past the list's end is this Jobs' (jobFrames).
	// The fork and join are Ctx.Join's, written out; no defer: the
	// task's recovers for every Join in it (Ctx.Join's Panics).
	w := c.w
	k := w.nforks
	if uint(k) < uint(len(w.forks)) { // unsigned: one check for the index too
		if t := w.forks[k]; t.jobs == unsafe.Pointer(js) { // t is never nil (noFork)
			j := (*job[A, R])(unsafe.Pointer(t)) // t is j.t, j's first field
			w.nforks = k + 1
			j.arg = b // its group is set if it is promoted (promote)
			w.cnt.forks++
			// offer, written out: inlined, it left a NOP in the fast path
			// for its inline mark.
			if w.rt.sched.v.Load() != 0 { // a worker spins or is parked
				w.promote()
			}
			ra, err = js.fn(c, a)
			// Only c and j are kept across the call: the rest is loaded
			// again from them, which costs less than the spills. The join
			// of an unpromoted fork whose first half returned no error
			// keeps only ra across the second call; joinRest does the rest.
			w = c.w
			n := j.k
			if w.nforks == n+1 && err == nil && n >= w.forkBase {
				w.nforks = n
				rb, err = j.fn(c, j.arg)
				return ra, rb, err
			}
			// Through the interface, so that the fast path keeps no
			// dictionary of its type parameters across the first call.
			err = j.t.r.joinRest(c, err)
			rb = j.res
			var zeroR R
			j.res = zeroR
			return ra, rb, err
		}
	}
	return js.joinSlow(c, a, b)
}

// joinRest is the join of Join's fast path when its fork was promoted,
// its first half returned errA != nil, or the list is out of order: it
// forgets the fork, runs or waits for the second half, leaves its result
// in j.res for Join to take, and returns the first of errA and its
// error.
func (j *job[A, R]) joinRest(c *Ctx, errA error) error {
	w := c.w
	n := j.k
	if w.nforks != n+1 {
		forksOutOfOrder()
	}
	w.nforks = n
	var err error
	if n >= w.forkBase {
		j.res, err = j.jobs.fn(c, j.arg)
	} else {
		w.forkBase = n
		j.res, err = j.jobs.joinPromoted(c, j, j.arg)
	}
	return firstErr(errA, err)
}

// joinSlow is Join when its fast path does not apply: the slot past the
// end of w's list holds no job of js (the first Join of js at that
// position, or something else forked there since). It puts w's job for
// that position there and joins again, now on the fast path.
func (js *Jobs[A, R]) joinSlow(c *Ctx, a, b A) (ra, rb R, err error) {
	w := c.w
	k := w.nforks
	var j *job[A, R]
	if f := js.local[w.id].frames; k < len(f) {
		j = f[k]
	}
	if j == nil {
		j = js.newFrame(w, k)
	}
	if k < len(w.forks) {
		w.forks[k] = &j.t
	} else {
		w.forks = append(w.forks, &j.t) // k == len(w.forks)
	}
	return js.Join(c, a, b)
}

// joinPromoted finishes the Join of a promoted job j: runs b here if j
// is still on the deque, else waits (helping) for the thief.
func (js *Jobs[A, R]) joinPromoted(c *Ctx, j *job[A, R], b A) (rb R, err error) {
	w := c.w
	p := w.dq.Pop()
	detached := p != &j.t
	if detached {
		// Other tasks run here before j is back or done: their Joins must
		// not reuse j's frame meanwhile.
		j.detach(w)
		for p != nil && p != &j.t {
			w.execute(p)
			p = w.dq.Pop()
		}
	}
	if p == &j.t {
		w.tookBack()
		rb, err = js.fn(c, b)
	} else {
		w.endBackoff() // a thief took it
		c.waitLatch(&j.t)
		rb, err = j.res, j.t.err
	}
	rethrow := j.t.panicked
	var zeroA A
	var zeroR R
	j.arg, j.res, j.t.err, j.t.joiner, j.t.group, j.t.panicked = zeroA, zeroR, nil, nil, nil, false
	if detached {
		j.attach(w)
	}
	if rethrow {
		panic(err) // the thief's *PanicError, on to this task (Ctx.Join's Panics)
	}
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
