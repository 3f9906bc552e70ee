// Package procstat splits the text of /proc/PID/stat (proc(5)) into its
// fields: "pid (comm) state ppid pgrp ...", where comm, the command name,
// may hold spaces and parentheses itself, so the fields after it are
// counted from the last ')'. The supervisor's process scans, the
// launcher's build identity and the benchmarks' CPU times all read it.
package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/numasteal/numasteal/internal/kernfile"
)

// ErrMalformed is wrapped by the errors of Parse and Stat.Uint.
var ErrMalformed = errors.New("malformed /proc/PID/stat")

// Stat is one /proc/PID/stat split into fields.
type Stat struct {
	// PID is field 1.
	PID int
	// Comm is field 2, without its parentheses.
	Comm []byte
	// Fields holds field 3 (the state) onwards: field n is Fields[n-3].
	Fields [][]byte
}

// Parse splits b, the text of /proc/PID/stat. Its slices point into b.
func Parse(b []byte) (Stat, error) {
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open <= 0 || end < open {
		return Stat{}, fmt.Errorf("procstat: %.40q: no (command name): %w", b, ErrMalformed)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return Stat{}, fmt.Errorf("procstat: %.40q: pid: %w", b, ErrMalformed)
	}
	f := bytes.Fields(b[end+1:])
	if len(f) == 0 || len(f[0]) != 1 {
		return Stat{}, fmt.Errorf("procstat: %.40q: no state after the command name: %w", b, ErrMalformed)
	}
	return Stat{PID: pid, Comm: b[open+1 : end], Fields: f}, nil
}

// Field returns field n, numbered from 1 as proc(5) numbers them, or nil
// when the line is shorter. Fields 1 and 2 are PID and Comm.
func (s Stat) Field(n int) []byte {
	if n < 3 || n-3 >= len(s.Fields) {
		return nil
	}
	return s.Fields[n-3]
}

// State returns field 3, the process state (R, S, D, T, t, Z, X, ...).
func (s Stat) State() byte { return s.Fields[0][0] }

// Int returns field n as a decimal integer (pids, process groups).
func (s Stat) Int(n int) (int, error) {
	v, err := strconv.Atoi(string(s.Field(n)))
	if err != nil {
		return 0, fmt.Errorf("procstat: field %d of pid %d: %w", n, s.PID, ErrMalformed)
	}
	return v, nil
}

// Uint returns field n as an unsigned decimal (times, counts).
func (s Stat) Uint(n int) (uint64, error) {
	v, err := strconv.ParseUint(string(s.Field(n)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("procstat: field %d of pid %d: %w", n, s.PID, ErrMalformed)
	}
	return v, nil
}

// Read reads /proc/PID/stat of pid under proc ("/proc") into buf, which
// it grows when the text does not fit, and returns the text (package
// kernfile: no more system calls than open, read and close).
func Read(proc string, pid int, buf []byte) ([]byte, error) {
	return kernfile.Read(proc+"/"+strconv.Itoa(pid)+"/stat", buf)
}
