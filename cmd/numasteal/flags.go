package main

import (
	"encoding/json"
	"errors"
	"flag"
	"io"
)

// parseFlags parses args into fs, whose output goes to stderr. ok is false
// when the command must return code at once: exitOK after -h, exitUsage
// after a bad flag (flag has already printed why).
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	return exitOK, true
}

// writeJSON prints v as indented JSON: exitOK, or exitFail when it cannot
// be encoded or written.
func writeJSON(w io.Writer, v any) int {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return exitFail
	}
	return exitOK
}
