package runtime

import (
	"context"
	goruntime "runtime"
	"sync"
	"sync/atomic"
)

// Group is a set of tasks that a caller waits for together, with errgroup
// semantics: the first task that fails (returns an error or panics) records
// its error and cancels the group's context, and tasks of the group that
// have not started yet are then dropped, reporting context.Canceled.
//
// Group's own methods are for goroutines outside the workers: Go and Spawn
// inject, Wait blocks (the package doc's table). A task submits to a group
// and waits for it through its Ctx instead (Ctx.Go, Ctx.Wait), which push
// onto its worker's deque and help; it may so use any group, its own
// (Ctx.Group) or one made by Runtime.Group. A group made by Ctx.Group is
// used only that way: its Go, Spawn and Wait panic.
//
// After Wait returns, the group may be used again.
type Group struct {
	rt     *Runtime
	parent context.Context // cancellation source for a Runtime.Group; nil for a task's group
	up     *Group          // the group of the task that made this one (Ctx.Group)
	ofTask bool            // made by Ctx.Group: Go, Spawn and Wait panic
	// stopped: the first failure happened: drop unstarted tasks. Here,
	// beside ofTask, to share its padding.
	stopped atomic.Bool
	labels  *groupLabels // set by SetName (labels.go); nil: unnamed

	// pending counts tasks submitted and not yet finished.
	pending atomic.Int64
	// lateWake: a goroutine is about to run lateNotify for the group's
	// injections (lend.go).
	lateWake atomic.Bool
	// fromCPU is the injecting goroutine's CPU as last read, for the next
	// fromLeft injections (Runtime.injectorCPU).
	fromCPU  atomic.Int32
	fromLeft atomic.Int32
	// helpers counts the waiters running the group's tasks as a lent
	// worker (lend.go).
	helpers atomic.Int32
	// waiters are the workers parked in a helping Wait on the group (more
	// than one when tasks on several workers wait on a shared group). A
	// waiter registers under mu, then loads pending; report locks mu after
	// its Add(-1) to zero, so either the waiter sees zero or report sees
	// it listed and unparks it.
	waiters []*worker // guarded by mu

	counts [numOutcomes]atomic.Int64

	mu     sync.Mutex
	err    error                   // first failure; guarded by mu
	ctx    context.Context         // created on demand by Context; guarded by mu
	cancel context.CancelCauseFunc // cancels ctx; guarded by mu
	// closeStop unregisters ctx's Close(Cancel) callback (outside groups);
	// allocated with the group's first context, guarded by mu.
	closeStop *afterStop
	waitCh    chan struct{} // closed when pending reaches zero; guarded by mu
}

// Go runs fn as a task of the group, injected from outside the workers
// into the inbox of the worker the policy places it on (Runtime.Place with
// balance.PlaceFork, from the caller's CPU). A task uses Ctx.Go instead.
func (g *Group) Go(fn Func) {
	g.outside("Go")
	t := &Task{Fn: fn, pooled: true}
	t.group = g
	g.pending.Add(1)
	g.rt.inject(t)
}

// Spawn runs the caller-owned task t as a task of the group, injected as
// Go does; see Task for when t may be reused. A task uses Ctx.Spawn.
func (g *Group) Spawn(t *Task) {
	g.outside("Spawn")
	t.group, t.pooled, t.join = g, false, false
	t.done.set(false)
	g.pending.Add(1)
	g.rt.inject(t)
}

// Wait blocks the calling goroutine until every task of the group has
// reported its outcome and returns the first failure: a task's error, a
// *PanicError, or the reason tasks were canceled (the parent context's
// error, ErrClosed). A task waits with Ctx.Wait, which helps instead: a
// task blocked here holds its worker's thread.
//
// When the worker that the group's latest task was placed on is parked,
// Wait first runs the group's queued tasks itself, on the calling
// goroutine, as that worker (its Ctx, its queues), while the worker's
// thread stays asleep: a small group submitted to an idle runtime then
// costs no thread wake-up (see lend.go for the design, and what such a
// task sees).
func (g *Group) Wait() error {
	g.outside("Wait")
	g.fromLeft.Store(0) // the next injection reads its CPU anew
	if g.pending.Load() != 0 {
		g.help()
	}
	g.mu.Lock()
	for g.pending.Load() != 0 {
		if g.waitCh == nil {
			g.waitCh = make(chan struct{})
		}
		ch := g.waitCh
		g.mu.Unlock()
		<-ch
		g.mu.Lock()
	}
	g.mu.Unlock()
	return g.waited()
}

// outside panics when g was made by Ctx.Group: its task submits and waits
// through its Ctx, and Group's injecting and blocking methods are for
// goroutines outside the workers.
func (g *Group) outside(method string) {
	if g.ofTask {
		panic("runtime: Group." + method + ": a group made by Ctx.Group; its task uses Ctx." + method)
	}
}

// Context returns the group's context: canceled when the first task fails,
// when the parent context (or the enclosing task's group) is canceled, when
// the runtime closes with Cancel, or when a Wait (Group.Wait or Ctx.Wait)
// returns, as errgroup's is. It is created on first use, so groups that
// never ask for it cost no context allocation; a group used again after
// Wait gets a new one.
//
// Canceling it at Wait is what lets it go: a context derived from a
// cancelable parent stays registered with that parent until one of the
// two is canceled, so a context kept open past Wait would hold the group
// for as long as the parent lives.
func (g *Group) Context() context.Context {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ctx == nil {
		parent := g.parent
		if parent == nil {
			if g.up != nil {
				parent = g.up.Context()
			} else {
				parent = g.rt.baseCtx
			}
		}
		g.ctx, g.cancel = context.WithCancelCause(parent)
		if g.parent != nil {
			// Close(Cancel) must reach running tasks of outside groups too.
			// The callback holds only cancel, not g, so g can become
			// unreachable; its cleanup then unregisters the callback.
			cancel := g.cancel
			stop := context.AfterFunc(g.rt.baseCtx, func() { cancel(ErrClosed) })
			if g.closeStop == nil {
				g.closeStop = &afterStop{}
				goruntime.AddCleanup(g, (*afterStop).run, g.closeStop)
			}
			g.closeStop.set(stop)
		}
		if g.err != nil {
			g.cancel(g.err)
		}
	}
	return g.ctx
}

// waited is called by a Wait that saw every task finish: unless tasks were
// submitted again meanwhile, it cancels the group's context (see Context)
// and returns the first failure.
func (g *Group) waited() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cancel != nil && g.pending.Load() == 0 {
		cause := g.err
		if cause == nil {
			cause = context.Canceled
		}
		g.cancel(cause)
		g.closeStop.run()
		g.ctx, g.cancel = nil, nil
	}
	return g.err
}

// afterStop holds the stop function of a context.AfterFunc, so that a
// group's cleanup can unregister it without referring to the group.
type afterStop struct {
	mu   sync.Mutex
	stop func() bool
}

func (a *afterStop) set(stop func() bool) {
	a.mu.Lock()
	a.stop = stop
	a.mu.Unlock()
}

// run unregisters the held callback, if any. A nil *afterStop does nothing.
func (a *afterStop) run() {
	if a == nil {
		return
	}
	a.mu.Lock()
	if a.stop != nil {
		a.stop()
		a.stop = nil
	}
	a.mu.Unlock()
}

// stopErr returns why the group's unstarted tasks must be dropped, or nil.
func (g *Group) stopErr() error {
	for ; g != nil; g = g.up {
		if g.stopped.Load() {
			return context.Canceled
		}
		if g.parent != nil {
			if err := g.parent.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// report records one task's outcome. Any goroutine.
func (g *Group) report(o outcome, err error) {
	g.counts[o].Add(1)
	if err != nil {
		g.fail(err)
	}
	if g.pending.Add(-1) == 0 {
		g.mu.Lock()
		if g.waitCh != nil {
			close(g.waitCh)
			g.waitCh = nil
		}
		for _, w := range g.waiters {
			g.rt.unpark(w) // takes rt.idle.mu: never held while locking g.mu
		}
		g.mu.Unlock()
	}
}

// parkWaiter parks worker w, waiting in Ctx.Wait, until g is done or w
// has other work (park returns to spin when it sees some). The list keeps
// its capacity, so a reused group parks without allocating. Owner of w
// only.
func (g *Group) parkWaiter(w *worker) {
	g.mu.Lock()
	g.waiters = append(g.waiters, w)
	g.mu.Unlock()
	if g.pending.Load() != 0 {
		w.park(func() bool { return g.pending.Load() == 0 })
	}
	g.mu.Lock()
	for i, v := range g.waiters {
		if v == w {
			last := len(g.waiters) - 1
			g.waiters[i], g.waiters[last] = g.waiters[last], nil
			g.waiters = g.waiters[:last]
			break
		}
	}
	g.mu.Unlock()
}

// fail records err if it is the group's first and cancels the group.
func (g *Group) fail(err error) {
	g.mu.Lock()
	if g.err == nil {
		g.err = err
		g.stopped.Store(true)
		if g.cancel != nil {
			g.cancel(err)
		}
	}
	g.mu.Unlock()
}
