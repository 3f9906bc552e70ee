package main

import (
	"context"
	"fmt"
	"io"
)

// benchmark is one "numasteal bench" experiment, dispatched like a command.
type benchmark struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// benchmarks lists the experiments. To add one, write its function in a
// file bench_NAME.go and add a line here.
var benchmarks = [...]benchmark{
	{"forkjoin", "fib(30) with a task per call: serial, numasteal, goroutines, errgroup", runBenchForkJoin},
	{"counters", "the counter(9) cost table: ns per increment of each kind of counter", runBenchCounters},
}

// runBench dispatches "numasteal bench NAME [flags]".
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		benchUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		benchUsage(stdout)
		return exitOK
	}
	for _, b := range benchmarks {
		if b.name == args[0] {
			return b.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "numasteal bench: unknown benchmark %q\n\n", args[0])
	benchUsage(stderr)
	return exitUsage
}

func benchUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: numasteal bench <benchmark> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "benchmarks:")
	for _, b := range benchmarks {
		fmt.Fprintf(w, "  %-10s %s\n", b.name, b.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Contenders alternate run by run (A B A B ...) and every figure is a median.")
}
