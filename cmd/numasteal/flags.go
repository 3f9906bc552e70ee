package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// newFlagSet returns the GNU-style flag set of the command name
// ("numasteal run"): long flags with two dashes (--jobs=8, --jobs 8),
// single-letter ones with one, clustered or with the value attached (-kj8),
// flags and arguments in any order, "--" ending the flags. Its help goes
// to stderr; flags are listed in the order they are defined.
func newFlagSet(name string, stderr io.Writer) *pflag.FlagSet {
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	return fs
}

// parseFlags parses args into fs (made by newFlagSet). ok is false when the
// command must return code at once: exitOK after -h or --help (the usage
// has been printed), exitUsage after a bad flag, with one line saying why
// and a hint to -h.
func parseFlags(fs *pflag.FlagSet, args []string, stderr io.Writer) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK, false
		}
		return usageError(fs, stderr, err), false
	}
	return exitOK, true
}

// usageError prints err as the one line of a wrong command line, with the
// hint to -h, and returns exitUsage.
func usageError(fs *pflag.FlagSet, stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
	fmt.Fprintf(stderr, "Run '%s -h' for usage.\n", fs.Name())
	return exitUsage
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
