// Command numasteal is the command-line face of the numasteal runtime: it
// shows the machine as numasteal sees it and runs its experiments.
//
// Usage:
//
//	numasteal <command> [flags] [arguments]
//
// Each command lives in its own file and is listed in commands below; run
// "numasteal help" for the list and "numasteal <command> -h" for its flags.
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/numasteal/numasteal/supervise"
)

// Exit codes shared by every command. A command ended by a signal exits
// with 128 + the signal's number instead (130 for SIGINT, 143 SIGTERM, 129
// SIGHUP, 131 SIGQUIT, 141 SIGPIPE; signals.go).
const (
	exitOK    = 0 // success
	exitFail  = 1 // the command ran and failed (bad input file, kernel refusal)
	exitUsage = 2 // the command line is wrong (flag.Parse's convention)
)

// command is one subcommand: run gets the arguments after the command name
// and returns the process exit code. It writes only to stdout and stderr and
// stops early when ctx is cancelled (SIGINT, SIGTERM).
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order "help" shows them. To add one,
// write its function in a file of its own and add a line here.
var commands = [...]command{
	{"topo", "print the machine: topology tree, NUMA nodes, scheduling domains", runTopo},
	{"run", "run a workload of commands or a build graph as placed processes", runRun},
	{"farm", "the compile farm of numasteal run --farm: farm status probes its hosts", runFarmCmd},
	{"bench", "run an experiment: forkjoin, counters (see numasteal bench help)", runBench},
	{"launch", "run a compile or link under the daemon's slots: make CC=\"numasteal launch gcc\"", runLaunch},
	{"exec", "run make (or a jobserver client) on the daemon's slots: numasteal exec make CC=\"numasteal-launch gcc\"", runExec},
	{"serve", "the per-user daemon that owns the machine's slots for every launcher", runServe},
	{"status", "the daemon's slots, running and waiting jobs, memory budget", runStatus},
	{"version", "print the module version and VCS revision (also --version)", runVersion},
}

func main() {
	// A numasteal started as a run's watchdog (package supervise) does
	// only that.
	supervise.MaybeWatchdog()
	if len(os.Args) > 1 && os.Args[1] == "launch" {
		// A launcher passes its signals on as it inherited them (package
		// launch): none of cli's handlers, which would un-ignore them.
		os.Exit(runLaunch(context.Background(), os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "exec" {
		// So does numasteal exec, for the build tool it becomes.
		os.Exit(runExec(context.Background(), os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(cli(os.Args[1:], os.Stdout, os.Stderr))
}

// cli runs the command args names as the process does: with the signal
// handling of signals.go, and stdout falling back to stderr once its
// reader is gone. It returns the exit status.
func cli(args []string, stdout, stderr io.Writer) int {
	ctx, sig := watchSignals(context.Background())
	code := dispatch(ctx, args, &fallbackWriter{w: stdout, alt: stderr}, stderr)
	sig.stop()
	return sig.exitCode(code)
}

// dispatch runs the command args[0] names with the rest of args and returns
// the exit code.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "--version" {
		return runVersion(ctx, args[1:], stdout, stderr)
	}
	return dispatchIn(ctx, "numasteal", commands[:], usage, args, stdout, stderr)
}

// dispatchIn runs the entry of table that args[0] names; prog names the
// caller in messages and usage prints the table's help.
func dispatchIn(ctx context.Context, prog string, table []command, usage func(io.Writer), args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	}
	for _, c := range table {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "%s: unknown command %q\n\n", prog, args[0])
	usage(stderr)
	return exitUsage
}

// usage prints the command list.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: numasteal <command> [flags] [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "numasteal <command> -h" for a command's flags.`)
}
