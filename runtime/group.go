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
// A Group made by Runtime.Group belongs to the outside world: its Go
// injects where the policy places it and its Wait blocks the calling
// goroutine. A Group made by Ctx.Group belongs to the task that made it:
// only that task may call its Go, Spawn and Wait, which push onto the
// worker's own deque and help instead of blocking. Other tasks add to any
// group with Ctx.Go and Ctx.Spawn.
//
// After Wait returns, the group may be used again.
type Group struct {
	rt     *Runtime
	parent context.Context // cancellation source for a Runtime.Group; nil for a task's group
	up     *Group          // the group of the task that made this one (Ctx.Group)
	owner  *Ctx            // the task that made the group (Ctx.Group); nil otherwise

	// pending counts tasks submitted and not yet finished.
	pending atomic.Int64
	// waiters are the workers parked in a helping Wait on the group (more
	// than one when tasks on several workers wait on a shared group). A
	// waiter registers under mu, then loads pending; report locks mu after
	// its Add(-1) to zero, so either the waiter sees zero or report sees
	// it listed and unparks it.
	waiters []*worker // guarded by mu

	stopped atomic.Bool // the first failure happened: drop unstarted tasks
	counts  [numOutcomes]atomic.Int64

	mu     sync.Mutex
	err    error                   // first failure; guarded by mu
	ctx    context.Context         // created on demand by Context; guarded by mu
	cancel context.CancelCauseFunc // cancels ctx; guarded by mu
	waitCh chan struct{}           // closed when pending reaches zero; guarded by mu
}

// Go runs fn as a task of the group. On a task's own group it pushes to the
// worker's deque; on a Runtime.Group it injects where the policy places it.
func (g *Group) Go(fn Func) {
	if c := g.owner; c != nil {
		c.Go(g, fn)
		return
	}
	t := &Task{Fn: fn, pooled: true}
	t.group = g
	g.pending.Add(1)
	g.rt.inject(t)
}

// Spawn runs the caller-owned task t as a task of the group; see Task for
// when t may be reused.
func (g *Group) Spawn(t *Task) {
	if c := g.owner; c != nil {
		c.Spawn(g, t)
		return
	}
	t.group, t.pooled, t.join = g, false, false
	t.done.set(false)
	g.pending.Add(1)
	g.rt.inject(t)
}

// Wait waits until every task of the group has reported its outcome and
// returns the first failure: a task's error, a *PanicError, or the reason
// tasks were canceled (the parent context's error, ErrClosed). On a task's
// own group Wait helps, running other tasks meanwhile; elsewhere it blocks.
func (g *Group) Wait() error {
	if c := g.owner; c != nil {
		return c.Wait(g)
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
	err := g.err
	g.mu.Unlock()
	return err
}

// Context returns the group's context: canceled when the first task fails,
// when the parent context (or the enclosing task's group) is canceled, or
// when the runtime closes with Cancel. It is created on first use, so
// groups that never ask for it cost no context allocation.
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
			goruntime.AddCleanup(g, func(stop func() bool) { stop() }, stop)
		}
		if g.err != nil {
			g.cancel(g.err)
		}
	}
	return g.ctx
}

// Counts returns how many tasks of the group ended in each way so far.
func (g *Group) Counts() GroupCounts {
	return GroupCounts{
		Succeeded: g.counts[Succeeded].Load(),
		Failed:    g.counts[Failed].Load(),
		Panicked:  g.counts[Panicked].Load(),
		Canceled:  g.counts[Canceled].Load(),
	}
}

// GroupCounts tallies the outcomes of a group's tasks.
type GroupCounts struct {
	Succeeded, Failed, Panicked, Canceled int64
}

// Total returns the number of outcomes reported.
func (c GroupCounts) Total() int64 { return c.Succeeded + c.Failed + c.Panicked + c.Canceled }

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
func (g *Group) report(o Outcome, err error) {
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
