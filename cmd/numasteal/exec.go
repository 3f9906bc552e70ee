package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"

	"github.com/numasteal/numasteal/launch/buildexec"
)

// exitNotFound is a shell's exit status for a command it cannot run.
const exitNotFound = 127

// runExec is "numasteal exec COMMAND [ARGS...]": package buildexec. There
// are no flags: everything after "exec" is the command. It returns only
// when the exec did not happen.
func runExec(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		w, code := stdout, exitOK
		if len(args) == 0 {
			w, code = stderr, exitUsage
		}
		io.WriteString(w, "usage: numasteal exec COMMAND [ARGS...]\n\n"+
			"Runs COMMAND (make, or any jobserver client) with the daemon's jobserver in\n"+
			"MAKEFLAGS: it forks only the jobs the daemon's slots and memory allow.\n"+
			"make's own -j options are dropped. Example:\n\n"+
			"  numasteal exec make -j CC=\"numasteal-launch gcc\"\n")
		return code
	}
	var serve []string
	if exe, err := os.Executable(); err == nil {
		serve = []string{exe, "serve"}
	}
	err := buildexec.Exec(buildexec.Config{Args: args, Serve: serve})
	var notRun *exec.Error
	if errors.As(err, &notRun) {
		// As a shell says it: the command, why, exit 127.
		why := "cannot run"
		switch {
		case errors.Is(err, exec.ErrNotFound):
			why = "not found in PATH"
		case errors.Is(err, fs.ErrNotExist):
			why = "no such file or directory"
		case errors.Is(err, fs.ErrPermission):
			why = "permission denied"
		}
		fmt.Fprintf(stderr, "numasteal exec: %s: %s\n", notRun.Name, why)
		return exitNotFound
	}
	fmt.Fprintf(stderr, "numasteal exec: %v\n", err)
	return exitFail
}
