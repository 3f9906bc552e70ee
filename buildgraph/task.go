package buildgraph

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
)

// Graph is a workload: tasks, their dependencies, and the named pools that
// limit how many tasks of a kind run at once (ninja's pools: a "link" pool
// of depth 1 keeps two linkers from running together).
//
// A Graph read by [LoadFile] is already valid; one built in Go should be
// checked with [Graph.Validate] (NewScheduler does so too). A Graph must not
// change once a Scheduler uses it.
type Graph struct {
	// Tasks in input order. Order breaks ties between tasks of equal
	// priority, so a file of commands runs top to bottom when nothing else
	// decides.
	Tasks []*Task
	// Pools maps a pool name to the most tasks of that pool that may run at
	// once (at least 1).
	Pools map[string]int

	// poolPos records where each pool was declared, for error messages.
	poolPos map[string]Pos
}

// Task is one command of a workload.
//
// Exactly one of Cmd and Shell is set: Cmd is an argv run directly (Cmd[0]
// is looked up in PATH), Shell is a command line for `/bin/sh -c`.
type Task struct {
	// ID names the task in dependencies, errors and traces. Unique in a
	// Graph. The command-file loader uses "line N"; the compilation-database
	// loader the entry's output, else its file.
	ID string
	// Cmd is the argv to execute, or nil when Shell is set.
	Cmd []string
	// Shell is a shell command line, or "" when Cmd is set.
	Shell string
	// Deps are the IDs of the tasks that must succeed before this one starts.
	Deps []string
	// CPUs is how many CPU slots the task holds while it runs; 0 means 1.
	// A compiler is 1; a parallel linker (lld --threads=4) may say 4.
	CPUs int
	// MemMB is the memory the task is expected to need, in MB; 0 means the
	// task is not counted against Limits.MemMB.
	MemMB int
	// Pool is the name of the pool the task belongs to, or "" for none.
	Pool string
	// Cwd is the working directory, or "" for the caller's.
	Cwd string
	// Env holds variables added to (or replacing those of) the caller's
	// environment, or nil.
	Env map[string]string
	// Remote marks a task that may go to a compile farm instead of a local
	// CPU. The Scheduler treats it like any other task; the executor decides.
	Remote bool
	// Pos is where the task was written (zero for a task built in Go).
	Pos Pos

	// slot is the task's position in the schedule of the newest Scheduler
	// over a graph that holds it (NewScheduler), read and written
	// atomically.
	slot int32
}

// Slots returns the CPU slots the task holds while running: CPUs, or 1 when
// CPUs is 0.
func (t *Task) Slots() int {
	if t.CPUs <= 0 {
		return 1
	}
	return t.CPUs
}

// CommandLine returns the command for display: Shell as written, or Cmd
// quoted so that a POSIX shell would split it back into the same words.
func (t *Task) CommandLine() string {
	if t.Cmd == nil {
		return t.Shell
	}
	return QuoteWords(t.Cmd)
}

// TraceName is the name of the task in a trace, as ninja names its
// slices by their output: the file after the command's last "-o" (a
// compiler's or a linker's output), else the ID, unless the ID is the one
// a commands file makes up from the line number ("line N"), which says
// nothing about the task: then the command line.
func (t *Task) TraceName() string {
	if o := t.outputFile(); o != "" {
		return o
	}
	if t.Pos.Line > 0 && t.ID == "line "+strconv.Itoa(t.Pos.Line) {
		return t.CommandLine()
	}
	return t.ID
}

// outputFile returns the word after the last "-o" of the command, or ""
// when there is none. A shell command is split at blanks; a word with
// quotes or an expansion in it is not taken.
func (t *Task) outputFile() string {
	words := t.Cmd
	if words == nil {
		words = strings.Fields(t.Shell)
	}
	for i := len(words) - 2; i >= 0; i-- {
		if words[i] != "-o" {
			continue
		}
		o := words[i+1]
		if t.Cmd == nil && strings.ContainsAny(o, "'\"\\$`;&|<>(){}*?[") {
			return ""
		}
		return o
	}
	return ""
}

// CommandHash returns a 64-bit FNV-1a hash of the command (Cmd words or
// Shell text, with the working directory), as 16 hex digits: a quick
// fingerprint for a program's own use. It is not keyed, so anyone who
// sees it can test guesses of the command; History writes a keyed hash
// instead (history_key.go).
func (t *Task) CommandHash() string {
	h := fnv.New64a()
	h.Write(t.appendCommand(nil))
	return fmt.Sprintf("%016x", h.Sum64())
}

// appendCommand appends the bytes a command hash covers: 'c' and each Cmd
// word with a NUL after it, or 's', Shell and a NUL; then Cwd.
func (t *Task) appendCommand(b []byte) []byte {
	if t.Cmd != nil {
		b = append(b, 'c')
		for _, w := range t.Cmd {
			b = append(b, w...)
			b = append(b, 0)
		}
	} else {
		b = append(b, 's')
		b = append(b, t.Shell...)
		b = append(b, 0)
	}
	return append(b, t.Cwd...)
}

// Pos is a place in an input file. Line and Col count from 1; Col counts
// bytes. A zero Line means "the file as a whole"; an empty File and zero
// Line mean "not from a file".
type Pos struct {
	File string
	Line int
	Col  int
}

// String formats the position as "file:line:col", dropping the parts that
// are zero, or "" for the zero Pos.
func (p Pos) String() string {
	s := p.File
	if p.Line > 0 {
		if s != "" {
			s += ":"
		}
		s += strconv.Itoa(p.Line)
		if p.Col > 0 {
			s += ":" + strconv.Itoa(p.Col)
		}
	}
	return s
}

// IsZero reports whether p names no place.
func (p Pos) IsZero() bool { return p == Pos{} }
