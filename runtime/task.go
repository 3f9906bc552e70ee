package runtime

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"unsafe"
)

// Func is the body of a task. The *Ctx is valid only while the call runs.
type Func func(c *Ctx) error

// Task is a unit of work that a caller may allocate once and submit many
// times, for code that wants no allocation per spawn. Set Fn, submit it with
// Group.Spawn or Ctx.Spawn, and do not touch or resubmit it until its group's
// Wait has returned (or Done reports true).
//
// The zero Task with a nil Fn is a valid task that does nothing.
type Task struct {
	// Fn is the task's body.
	Fn Func

	group *Group
	ctx   Ctx // the context handed to Fn; lives here so running allocates nothing

	// latch is set to 1 (atomic, release) when a Join job finishes on a
	// thief; the joining owner spins on it. Unused by group tasks.
	latch  latch
	err    error   // a Join job's result, published by latch
	joiner *worker // the worker waiting in Join for this job

	r jobRunner // a Jobs job: run r instead of Fn
	// jobs is the *Jobs of a Jobs job, whose Task is the job's first
	// field: Jobs.Join's fast path knows its job by it (jobs.go).
	jobs unsafe.Pointer

	// born is the pusher's coarse clock (worker.now) when the task was
	// pushed to a deque or LIFO slot, for the cache-hot test of periodic
	// balancing (periodic.go); 0 for an injected task. Written by the
	// pusher before the push publishes the task; read only by whoever took it.
	born int64
	// returned marks a task that periodic balancing gave back to its
	// worker's inbox as cache-hot, so the inbox pop that takes it does not
	// count it as injected. Written before the inbox push, read after the
	// pop (the inbox lock orders them).
	returned bool

	pooled bool // allocated by the runtime and returned to a free list after it ends
	join   bool // a Join job: reports to latch, not to a group
	// panicked marks a Join job whose body panicked on a thief: its
	// joiner raises err, the *PanicError, again. Published by latch.
	panicked bool
	done     doneFlag
}

// jobRunner is implemented by the job objects of Jobs: runJob runs the
// body, joinRest finishes a Join off its fast path, detach and release
// are jobFrames' bookkeeping (jobs.go).
type jobRunner interface {
	runJob(c *Ctx) error
	joinRest(c *Ctx, errA error) error
	detach(w *worker)
	release(w *worker)
}

// Done reports whether a task submitted with Spawn has reported its outcome.
func (t *Task) Done() bool { return t.done.get() }

// outcome is how a task ended: exactly one per submitted task, reported to
// its group (Group.report), which counts them.
type outcome uint8

const (
	succeeded outcome = iota // Fn returned nil
	failed                   // Fn returned an error
	panicked                 // Fn panicked; recovered as a *PanicError
	canceled                 // never started: its group or the runtime was canceled or closed
	numOutcomes
)

// PanicError is the error a task's panic becomes. It carries the panic value
// and the stack of the goroutine at the time of the panic.
type PanicError struct {
	Value any
	Stack []byte
}

// Error implements error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("runtime: task panicked: %v\n\n%s", e.Value, e.Stack)
}

// Unwrap returns the panic value when it is an error, so errors.Is and
// errors.As see through the panic.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

func newPanicError(v any) *PanicError {
	buf := make([]byte, 16<<10)
	buf = buf[:goruntime.Stack(buf, false)]
	return &PanicError{Value: v, Stack: buf}
}

// ErrClosed is the error of tasks submitted to a closed or closing runtime.
var ErrClosed = errors.New("runtime: closed")

// run executes t's body on the calling worker and returns its outcome and
// error. Its deferred recover keeps the worker alive through a panic in
// the body or in any Join in it: the Joins carry no recover of their own
// (Ctx.Join), so run joins the forks the panic left on w's list above the
// task's base (unwindForks) before it reports the panic as a *PanicError.
// A body that returns with forks still above its base recovered a panic
// on its way through a Join (Ctx.Join's Panics); run joins them too and
// fails the task with errJoinSkipped, so that no half is lost.
func (t *Task) run(w *worker) (o outcome, err error) {
	t.ctx = Ctx{w: w, t: t}
	base := w.nforks
	w.segs = append(w.segs, forkSeg{base: base, group: t.group})
	done := false
	defer func() {
		// recover only when the body did not return: a recover call on
		// every task would cost more than the rest of this function.
		if !done {
			v := recover()
			pe, ok := v.(*PanicError) // a Join raising a thief's again
			if !ok {
				pe = newPanicError(v) // the stack is still the panicking one's
			}
			w.unwindForks(&t.ctx, base)
			o, err = panicked, pe
		}
		n := len(w.segs) - 1
		w.segs[n] = forkSeg{}
		w.segs = w.segs[:n]
	}()
	switch {
	case t.r != nil:
		err = t.r.runJob(&t.ctx)
	case t.Fn != nil:
		err = t.Fn(&t.ctx)
	}
	if w.nforks != base {
		w.unwindForks(&t.ctx, base)
		done = true
		return failed, errJoinSkipped
	}
	done = true
	if err != nil {
		return failed, err
	}
	return succeeded, nil
}

// errJoinSkipped is the error of a task whose body recovered a panic that
// had unwound a Join before its join (Ctx.Join's Panics).
var errJoinSkipped = errors.New("runtime: a recover in the task's body stopped a panic that had skipped the join of a Join; its second half ran after the body returned")

// canceledErr returns why t must not start, or nil when it may.
func (t *Task) canceledErr(rt *Runtime) error {
	if rt.canceled.Load() {
		return context.Canceled
	}
	if g := t.group; g != nil {
		return g.stopErr()
	}
	return nil
}
