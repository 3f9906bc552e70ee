package runtime

import (
	"context"
)

// Ctx is what a running task sees of the runtime: where it runs, its
// context, and the operations that spawn and wait on this worker. A *Ctx is
// valid only during the call it was passed to and only on that goroutine;
// do not keep it or hand it to another goroutine.
type Ctx struct {
	w *worker
	t *Task
}

// Context returns the context of the task's group (see Group.Context).
func (c *Ctx) Context() context.Context {
	if g := c.t.group; g != nil {
		return g.Context()
	}
	return c.w.rt.baseCtx
}

// Err returns why the task should stop early — its group failed or was
// canceled, or the runtime is closing with Cancel — or nil. It is much
// cheaper than Context().Err() and allocates nothing.
func (c *Ctx) Err() error { return c.t.canceledErr(c.w.rt) }

// Worker returns the id of the worker running the task.
func (c *Ctx) Worker() int { return c.w.id }

// CPU returns the CPU of the worker running the task: the CPU its thread
// is pinned to, or, when the runtime is not pinned (Runtime.Pinned), the
// CPU it stands for.
func (c *Ctx) CPU() int { return c.w.cpu }

// Node returns the NUMA node of CPU, or -1.
func (c *Ctx) Node() int { return c.w.node }

// Group returns a new group for the calling task's children, to submit to
// with c.Go, c.GoNext or c.Spawn and wait for with c.Wait (Group's own Go,
// Spawn and Wait panic on it). Its context derives from the task's own
// group's, and a failure or cancellation there drops its unstarted tasks
// too.
func (c *Ctx) Group() *Group {
	g := &Group{rt: c.w.rt, up: c.t.group, ofTask: true}
	if up := c.t.group; up != nil {
		g.labels = up.labels // a named root names its subtree (labels.go)
	}
	return g
}

// Go runs fn as a task of g, pushed onto this worker's deque (work-first:
// the caller goes on; fn runs later here or earlier on a thief).
func (c *Ctx) Go(g *Group, fn Func) {
	t := c.w.newTask()
	t.Fn, t.group = fn, g
	g.pending.Add(1)
	c.w.push(t)
}

// Spawn runs the caller-owned task t as a task of g; see Task for reuse.
func (c *Ctx) Spawn(g *Group, t *Task) {
	t.group, t.pooled, t.join = g, false, false
	t.done.set(false)
	g.pending.Add(1)
	c.w.push(t)
}

// GoNext runs fn as a task of g next on this worker, through the LIFO slot
// (Go's runnext): for a continuation whose data the current task has just
// touched. A newer GoNext moves the older one to the deque, and at most a
// few slot tasks run in a row before the worker takes older work.
func (c *Ctx) GoNext(g *Group, fn Func) {
	t := c.w.newTask()
	t.Fn, t.group = fn, g
	g.pending.Add(1)
	c.w.pushNext(t)
}

// Wait waits for g while running other tasks on this worker (it helps):
// its own queues first, then steals. When there is nothing to run it parks
// until g is done or new work arrives. It returns g's first failure, as
// Group.Wait does. g may be any group: one from c.Group, or one made by
// Runtime.Group.
//
// Helping runs other tasks nested on this task's stack, and Wait returns
// only once the one it is running has. That is safe when g holds the
// caller's own subtree (its Ctx.Group, or children it submitted to a
// Runtime.Group of its own): nothing in it waits for the caller. On a
// group shared with other tasks it can deadlock: a task of g that itself
// waits, directly or not, for a task that this Wait happens to be running
// nested can never finish. Wait on such a group from a goroutine outside
// the workers (Group.Wait), or keep the group's tasks free of waits, as
// with TBB's task_group and Cilk's sync, which wait only for children.
func (c *Ctx) Wait(g *Group) error {
	w := c.w
	w.depth++
	defer func() { w.depth-- }()
	for g.pending.Load() != 0 {
		if t := w.findWork(); t != nil {
			w.execute(t)
			continue
		}
		g.parkWaiter(w) // nothing to run: park until g is done or work comes
	}
	w.leaveHelping()
	return g.waited()
}
