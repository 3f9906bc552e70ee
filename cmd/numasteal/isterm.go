package main

import (
	"io"
	"os"

	"golang.org/x/term"
)

// isTerminal reports whether w is a terminal: an *os.File on one, or a
// writer wrapping one (an Unwrap method, as fallbackWriter has, the
// stdout of every command).
func isTerminal(w io.Writer) bool {
	for {
		switch v := w.(type) {
		case *os.File:
			return term.IsTerminal(int(v.Fd()))
		case interface{ Unwrap() io.Writer }:
			w = v.Unwrap()
		default:
			return false
		}
	}
}
