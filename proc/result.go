package proc

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// Outcome is how a process task ended: exactly one per Runner.Start.
type Outcome uint8

// The outcomes of a process task.
const (
	// Succeeded: the command exited with status 0.
	Succeeded Outcome = iota
	// Failed: the command exited with another status, was killed by a
	// signal or by its timeout, or could not be started.
	Failed
	// Canceled: the context, the runner or the runtime was canceled, before
	// the command started or while it ran.
	Canceled
)

// String returns "succeeded", "failed" or "canceled".
func (o Outcome) String() string {
	switch o {
	case Succeeded:
		return "succeeded"
	case Failed:
		return "failed"
	case Canceled:
		return "canceled"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Result is how one process task ended. Exactly one is delivered per
// Runner.Start.
type Result struct {
	// Args is the command's argv.
	Args []string
	// Outcome is how the task ended.
	Outcome Outcome
	// Err is nil on success and says why otherwise: an *ExitError for a
	// command that ran, the exec error for one that could not start
	// (errors.Is(err, exec.ErrNotFound) for a missing program), the
	// context's cause (or runtime.ErrClosed) for one canceled before it
	// started.
	Err error

	// Pid is the command's process id (also its process group id), -1 when
	// it never started.
	Pid int
	// CPU and Node are where the placement put it (-1 when it never
	// started; with PinNone the CPU it was counted on, not confined to);
	// Affinity is the mask it started with (empty with PinNone).
	CPU, Node int
	Affinity  cpuset.Set

	// Start and End bound the process's life (fork to reap); zero when it
	// never started. Wall is End-Start; User and Sys are its CPU times from
	// rusage (those of the command and of the children it waited for).
	Start, End      time.Time
	Wall, User, Sys time.Duration
	// MaxRSS is the largest resident set of the command or of a
	// descendant it waited for (rusage ru_maxrss), in bytes; 0 when it
	// never started.
	MaxRSS int64
	// ExitCode is the exit status, or -1 when the command did not exit
	// normally (a signal) or never started.
	ExitCode int
	// Signal is the signal that ended the command, or 0.
	Signal syscall.Signal
	// TimedOut reports that Command.Timeout killed the command.
	TimedOut bool

	// Stdout and Stderr are the captured streams. Close them (Close) when
	// done, to remove spill files.
	Stdout, Stderr *Output
}

// Success reports whether the command ran and exited with status 0.
func (r *Result) Success() bool { return r.Outcome == Succeeded }

// Close removes the spill files of both streams.
func (r *Result) Close() error {
	return errors.Join(r.Stdout.Close(), r.Stderr.Close())
}

// ExitError describes a command that ran and did not succeed.
type ExitError struct {
	Args     []string
	ExitCode int            // -1 when killed by a signal
	Signal   syscall.Signal // 0 when it exited
	// Cause is ErrTimeout, or the context's cause (context.Canceled,
	// runtime.ErrClosed) when the command was killed for that reason; nil
	// when it ended by itself.
	Cause error
}

// Error describes the failure: "exit status 2", "killed by signal 9
// (killed)", with the reason for a kill.
func (e *ExitError) Error() string {
	var b strings.Builder
	b.WriteString(commandName(e.Args))
	b.WriteString(": ")
	if e.Signal != 0 {
		fmt.Fprintf(&b, "killed by signal %d (%v)", int(e.Signal), e.Signal)
	} else {
		fmt.Fprintf(&b, "exit status %d", e.ExitCode)
	}
	switch {
	case errors.Is(e.Cause, ErrTimeout):
		b.WriteString(" after timing out")
	case e.Cause != nil:
		fmt.Fprintf(&b, " (%v)", e.Cause)
	}
	return b.String()
}

// Unwrap returns the cause of a kill, so errors.Is(err, ErrTimeout) and
// errors.Is(err, context.Canceled) work.
func (e *ExitError) Unwrap() error { return e.Cause }

func commandName(args []string) string {
	if len(args) == 0 {
		return "(empty command)"
	}
	return args[0]
}

// fill sets the exit, rusage and outcome fields from the reaped command.
// cause is why it was killed, or nil.
func (r *Result) fill(c *exec.Cmd, werr error, cause error) {
	r.Wall = r.End.Sub(r.Start)
	ps := c.ProcessState
	if ps == nil {
		r.Outcome, r.Err = Failed, werr
		return
	}
	// ru_utime and ru_stime of the wait4 rusage (ps.SysUsage()).
	r.User, r.Sys = ps.UserTime(), ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		r.MaxRSS = int64(ru.Maxrss) << 10 // KiB on Linux
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		r.Signal = ws.Signal()
	} else {
		r.ExitCode = ps.ExitCode()
	}
	r.TimedOut = errors.Is(cause, ErrTimeout)
	switch {
	case cause != nil && !r.TimedOut:
		r.Outcome = Canceled
	case r.Signal == 0 && r.ExitCode == 0 && cause == nil:
		r.Outcome = Succeeded
		return
	default:
		r.Outcome = Failed
	}
	r.Err = &ExitError{Args: r.Args, ExitCode: r.ExitCode, Signal: r.Signal, Cause: cause}
}
