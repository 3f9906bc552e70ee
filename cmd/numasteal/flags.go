package main

import (
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
