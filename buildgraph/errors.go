package buildgraph

import "errors"

// Sentinel errors, matched with errors.Is through an [*Error].
var (
	// ErrSyntax: the input is not well-formed (JSON syntax, an unterminated
	// quote in a command).
	ErrSyntax = errors.New("syntax error")
	// ErrField: a field is unknown, missing, repeated or of the wrong type
	// or value.
	ErrField = errors.New("bad field")
	// ErrDuplicate: two tasks share an ID.
	ErrDuplicate = errors.New("duplicate task id")
	// ErrUnknownDep: a task depends on an ID no task has.
	ErrUnknownDep = errors.New("unknown dependency")
	// ErrCycle: the dependencies form a cycle.
	ErrCycle = errors.New("dependency cycle")
	// ErrPool: a pool is undeclared or its limit is below 1.
	ErrPool = errors.New("bad pool")
	// ErrTooBig: a task needs more CPU slots or memory than the limits can
	// ever grant, so it could never start.
	ErrTooBig = errors.New("task exceeds limits")
	// ErrNoProgram: a task's program is not found (Graph.CheckPrograms).
	ErrNoProgram = errors.New("program not found")
	// ErrNoMoreTasks is returned by [Scheduler.Acquire] when no task will be
	// handed out again: every task has started or finished, or the schedule
	// stopped after a failure or was canceled.
	ErrNoMoreTasks = errors.New("buildgraph: no more tasks")
)

// Error is a problem with a workload, located by position and task.
//
// Its message is "pos: text", where text already names the task when there
// is one (`build.json:7:5: task "b" depends on unknown task "x"`). Unwrap
// yields one of the sentinel errors above (or an I/O error), so callers can
// tell bad input (exit status 2) from everything else.
type Error struct {
	Pos  Pos    // where; zero for a graph built in Go
	Task string // the task's ID, "" when the problem is not about one task
	Msg  string // the text, without the position
	Err  error  // the kind: a sentinel error or the underlying cause
}

// Error returns "pos: msg", or msg alone when the position is unknown.
func (e *Error) Error() string {
	if p := e.Pos.String(); p != "" {
		return p + ": " + e.Msg
	}
	return e.Msg
}

// Unwrap returns the kind of error.
func (e *Error) Unwrap() error { return e.Err }

// maxErrors bounds how many problems Validate reports at once; a generated
// graph with one systematic mistake would otherwise print thousands.
const maxErrors = 20
