package buildgraph

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on what a task may hold, checked by Validate.
//
// An ID is printed to terminals, written to the history file and to
// traces, so it must be printable text of a bounded size: a 1 MiB ID once
// ran, and its history line was then too long for every later run to read.
// A command is bounded by what execve accepts: the kernel refuses a single
// argument longer than MAX_ARG_STRLEN (32 pages, 128 KiB), and a Shell
// line is one argument of `/bin/sh -c`.
const (
	// MaxIDBytes is the longest task ID: PATH_MAX, the longest path an
	// output could be.
	MaxIDBytes = 4096
	// MaxArgBytes is the longest word of Cmd, and the longest Shell line:
	// MAX_ARG_STRLEN less its NUL.
	MaxArgBytes = 128<<10 - 1
	// MaxCommandBytes bounds the words of a Cmd together (execve's limit
	// is a quarter of the stack limit, 2 MiB by default, shared with the
	// environment).
	MaxCommandBytes = 1 << 20
)

// badText returns why s may not be a task ID or dependency name, or "":
// too long, invalid UTF-8, or holding a control character (C0, DEL or
// C1), which would be printed raw to a terminal.
func badText(s string, limit int) string {
	if len(s) > limit {
		return fmt.Sprintf("is %d bytes long, more than %d", len(s), limit)
	}
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return fmt.Sprintf("holds invalid UTF-8 at byte %d", i)
		case unicode.IsControl(r):
			return fmt.Sprintf("holds the control character %U at byte %d", r, i)
		}
	}
	return ""
}

// badCommand returns why t's command cannot be executed, or "".
func badCommand(t *Task) string {
	if t.Cmd == nil {
		if len(t.Shell) > MaxArgBytes {
			return fmt.Sprintf("its shell command is %d bytes long, more than %d (the kernel's limit for one argument)", len(t.Shell), MaxArgBytes)
		}
		return ""
	}
	total := 0
	for i, w := range t.Cmd {
		if len(w) > MaxArgBytes {
			return fmt.Sprintf("argument %d of its command is %d bytes long, more than %d (the kernel's limit for one argument)", i, len(w), MaxArgBytes)
		}
		total += len(w) + 1
	}
	if total > MaxCommandBytes {
		return fmt.Sprintf("its command is %d bytes long, more than %d", total, MaxCommandBytes)
	}
	return ""
}

// quoteID quotes an ID for a message, cut to its first 60 bytes (on a
// rune boundary) when longer, so a message stays a line.
func quoteID(id string) string {
	const keep = 60
	if len(id) <= keep {
		return strconv.Quote(id)
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return strconv.Quote(id[:cut]) + fmt.Sprintf("... (%d bytes)", len(id))
}
