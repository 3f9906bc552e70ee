package buildgraph

import (
	"fmt"
	"time"
)

// Outcome is what became of a task. Every task of a finished schedule has
// exactly one outcome other than Unfinished.
type Outcome uint8

const (
	// Unfinished: the task is waiting, ready or running.
	Unfinished Outcome = iota
	// Succeeded: the task ran and succeeded.
	Succeeded
	// Failed: the task ran and failed (exit status not 0, a signal, a
	// program that could not be started, a timeout).
	Failed
	// Skipped: the task never ran because a dependency, direct or not,
	// failed. Result.Cause names the failed task.
	Skipped
	// NotRun: the task never ran because the schedule stopped at a failure
	// elsewhere (no keep-going).
	NotRun
	// Canceled: the schedule was canceled (Scheduler.Cancel) before the
	// task ran, or the task was killed while running because of it.
	Canceled

	// NumOutcomes is the number of Outcome values, the length of
	// Progress.Done.
	NumOutcomes = iota
)

var outcomeNames = [NumOutcomes]string{"unfinished", "succeeded", "failed", "skipped", "not run", "canceled"}

// String returns the outcome in lower-case words ("not run").
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Ran reports whether a task with this outcome was started.
func (o Outcome) Ran() bool { return o == Succeeded || o == Failed }

// Result is one task's outcome in a schedule.
type Result struct {
	Task    *Task
	Outcome Outcome
	// Cause is, for a Skipped task, the failed task that caused the skip
	// (the first failure to reach it); nil otherwise.
	Cause *Task
	// Start and End are when the Scheduler handed the task out and when it
	// was told the task finished; zero for a task that never started.
	Start, End time.Time
}

// Progress is a snapshot of a schedule, for a progress display. The counts
// add up to Total.
type Progress struct {
	Total   int
	Waiting int // some dependency has not finished
	Ready   int // could start, waiting for resources
	Running int
	// Finished tasks, by outcome (index Succeeded, Failed, ...); Unfinished
	// is always 0.
	Done [NumOutcomes]int
	// SlotsUsed and MemUsedMB are what the running tasks hold.
	SlotsUsed, MemUsedMB int

	// WorkLeft is the summed critical-path weight of the tasks without an
	// outcome (running ones counted whole), and PathLeft the longest chain
	// of them: the highest priority among ready and running tasks (see
	// Scheduler). They are milliseconds when Timed (a History knew some
	// task), else counts of tasks. An ETA is about
	// max(PathLeft, WorkLeft/slots), less the time the running tasks have
	// already run.
	WorkLeft, PathLeft int64
	Timed              bool
}

// Finished returns the number of tasks with an outcome.
func (p Progress) Finished() int {
	n := 0
	for _, c := range p.Done {
		n += c
	}
	return n
}
