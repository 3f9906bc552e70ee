package runtime

import (
	"context"
	"runtime/pprof"
)

// Profiler labels: the tasks of a named group (Group.SetName) run under the
// pprof labels group=NAME and kind=KIND, so that a CPU profile of a program
// that runs several kinds of work on one runtime separates them:
//
//	go tool pprof -tagfocus group=parse cpu.pprof
//	go tool pprof -tags cpu.pprof
//
// KIND is how the task was submitted: "go" (Group.Go, Ctx.Go, Ctx.GoNext),
// "spawn" (a caller-owned Task: Group.Spawn, Ctx.Spawn), "jobs" (a job of
// Jobs) or "join" (the second half of a Ctx.Join that a thief ran). A group
// made by Ctx.Group takes its task's group's name, so a named root labels
// its whole subtree.
//
// Cost. An unnamed group's task costs one comparison more when it runs:
// its group's labels (nil) against those the worker's goroutine has (nil
// unless it is nested in a named task's helping Wait). SetName builds the
// labeled contexts once, one per kind, so switching labels around a named
// task is two pprof.SetGoroutineLabels calls, which allocate nothing.
// Labels set on the goroutine that called New, which the workers inherit,
// are replaced after the first named task a worker runs; they are not
// restored.

// taskKind is how a task was submitted, for its kind label.
type taskKind uint8

const (
	kindGo taskKind = iota
	kindSpawn
	kindJobs
	kindJoin
	numKinds
)

var kindNames = [numKinds]string{"go", "spawn", "jobs", "join"}

// groupLabels are a named group's label sets, one per task kind.
type groupLabels struct {
	name string
	ctx  [numKinds]context.Context // carries pprof.Labels("group", name, "kind", kind)
}

// SetName names the group in CPU profiles: its tasks run under the pprof
// labels group=name and kind (see "Profiler labels" in labels.go); "" removes
// the name. Groups that its tasks make with Ctx.Group take the name too.
// Call it before submitting to the group, as with errgroup's SetLimit: it
// must not be called while tasks of the group are queued or running. It
// returns g, so it chains: rt.Group(ctx).SetName("parse").
func (g *Group) SetName(name string) *Group {
	if name == "" {
		g.labels = nil
		return g
	}
	l := &groupLabels{name: name}
	for k := range l.ctx {
		l.ctx[k] = pprof.WithLabels(context.Background(), pprof.Labels("group", name, "kind", kindNames[k]))
	}
	g.labels = l
	return g
}

// Name returns the group's name, "" when it has none.
func (g *Group) Name() string {
	if g.labels == nil {
		return ""
	}
	return g.labels.name
}

// labelCtx returns the context carrying t's labels, or nil for a task of
// an unnamed group (or of none).
func (t *Task) labelCtx() context.Context {
	g := t.group
	if g == nil || g.labels == nil {
		return nil
	}
	k := kindGo
	switch {
	case t.join:
		k = kindJoin
	case t.r != nil:
		k = kindJobs
	case !t.pooled:
		k = kindSpawn
	}
	return g.labels.ctx[k]
}

// setLabels gives the worker's goroutine the labels of ctx (none for nil).
// Owner only.
func (w *worker) setLabels(ctx context.Context) {
	if ctx == w.labels {
		return
	}
	w.labels = ctx
	w.relabeled = true // an outside waiter running as w restores its own (lend.go)
	if ctx == nil {
		ctx = context.Background()
	}
	pprof.SetGoroutineLabels(ctx)
}
