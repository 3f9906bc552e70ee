package affinity

import (
	"errors"
	"strconv"
)

// ErrEmptySet is the cause when a CPU or node set that must not be empty is
// empty. No system call is made in that case.
var ErrEmptySet = errors.New("empty set")

// ErrUnsupported is the cause of every error on systems other than Linux. It
// wraps errors.ErrUnsupported.
var ErrUnsupported error = unsupportedError{}

// unsupportedError is ErrUnsupported: a type rather than fmt.Errorf, which
// would format it at the start of every program that links this package
// (the compiler launcher among them).
type unsupportedError struct{}

func (unsupportedError) Error() string {
	return "CPU affinity and NUMA memory policy need Linux: " + errors.ErrUnsupported.Error()
}

func (unsupportedError) Unwrap() error { return errors.ErrUnsupported }

// Error records a failed placement request: which system call, for which
// thread or process, with which CPU or node set, and why.
type Error struct {
	// Op is the system call, such as "sched_setaffinity", or the system
	// call and the policy, such as "set_mempolicy bind".
	Op string
	// Pid is the process or thread acted on; 0 means the calling thread.
	Pid int
	// Unit says what Set counts: "CPUs" or "nodes"; "" when the request
	// carried no set.
	Unit string
	// Set is the set in cpulist form ("7-8", "0,2"), "" when it was empty.
	Set string
	// Err is the cause: a unix.Errno from the kernel, ErrEmptySet or
	// ErrUnsupported.
	Err error
}

// Error returns the message, e.g.
// "affinity: sched_setaffinity to CPUs 7-8: invalid argument".
func (e *Error) Error() string {
	msg := "affinity: " + e.Op
	if e.Pid != 0 {
		msg += " of pid " + strconv.Itoa(e.Pid)
	}
	switch {
	case e.Unit == "":
	case e.Set == "":
		msg += " to no " + e.Unit
	default:
		msg += " to " + e.Unit + " " + e.Set
	}
	return msg + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }
