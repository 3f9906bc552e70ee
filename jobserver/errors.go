package jobserver

import (
	"errors"
	"fmt"
)

// ErrNoJobserver reports that MAKEFLAGS names no jobserver: the process was
// not started by a make with -jN (or make ran it as a non-recursive recipe
// under make ≥ 4.4, or gave it -j alone, meaning unlimited jobs). Callers
// use their own job limit; this is not a failure worth reporting.
var ErrNoJobserver = errors.New("jobserver: no jobserver in MAKEFLAGS")

// ErrClosed is returned by operations on a closed [Client] or [Server].
var ErrClosed = errors.New("jobserver: closed")

// ErrNotHeld is returned by [Client.Release] for a token the client does not
// hold: the zero Token, a token released twice, or one from another client.
var ErrNotHeld = errors.New("jobserver: token not held")

// ErrBroken reports a jobserver pipe at end of file: no process holds its
// write side any more (the make that served it died, or closed it), so no
// token will ever come. A Pool then runs on with the caller's own limit.
var ErrBroken = errors.New("jobserver pipe closed: no writer left")

// UnavailableError reports a jobserver that MAKEFLAGS names but that cannot
// be used: a malformed option, descriptors that are closed (make did not
// treat the recipe as recursive: add '+' or use $(MAKE)), descriptors that
// are not pipes, or a FIFO that does not exist. A CLI reports it once and
// falls back to its own -j.
type UnavailableError struct {
	Option string // the MAKEFLAGS word, e.g. "--jobserver-auth=3,4"
	Op     string // what failed, e.g. "fstat fd 3"
	Err    error  // the underlying error
}

// Error implements error.
func (e *UnavailableError) Error() string {
	return fmt.Sprintf("jobserver: %s unusable: %s: %v", e.Option, e.Op, e.Err)
}

// Unwrap returns the underlying error.
func (e *UnavailableError) Unwrap() error { return e.Err }
