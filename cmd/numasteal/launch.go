package main

import (
	"context"
	"io"
	"os"

	"github.com/numasteal/numasteal/launch"
)

// runLaunch is "numasteal launch COMMAND ARGS...": package launch, from
// the full binary. numasteal-launch is the same in a binary that links
// only package launch (docs/BENCHMARKS.md, "Launcher overhead").
// There are no flags: everything after "launch" is the command.
func runLaunch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		io.WriteString(stdout, "usage: numasteal launch COMMAND [ARGS...]\n")
		return exitOK
	}
	if len(args) > 0 && args[0] == "--version" {
		return runVersion(ctx, nil, stdout, stderr)
	}
	var serve []string
	if exe, err := os.Executable(); err == nil {
		serve = []string{exe, "serve"}
	}
	return launch.Run(launch.Config{Args: args, Prog: "numasteal launch", Serve: serve, Stderr: stderr})
}
