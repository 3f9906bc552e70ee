package main

import (
	"context"
	"fmt"
	"io"
)

// benchmarks lists the experiments. To add one, write its function in a
// file bench_NAME.go and add a line here.
var benchmarks = [...]command{
	{"forkjoin", "fib(30) with a task per call: serial, numasteal, goroutines, errgroup", runBenchForkJoin},
	{"counters", "the counter(9) cost table: ns per increment of each kind of counter", runBenchCounters},
	{"kernbench", "the seed's kernel-build table: one build graph through numasteal run, make, ninja, xargs", runBenchKernbench},
	{"memory", "a make project whose compiles overfill a memory-limited cgroup: plain make -j1/2/4 and numasteal-launch", runBenchMemory},
	{"jobserver", "1,000 ready compiles through numasteal-launch, by make -j and numasteal exec make -j: launchers alive, numasteal's peak PSS", runBenchJobserver},
	{"launch", "the compiler launcher's cost per command: numasteal-launch true and gcc -c against the plain commands", runBenchLaunch},
	{"sdet", "SDET multi-user throughput, 1-128 scripts: numasteal process tasks vs goroutines + os/exec", runBenchSDET},
	{"diffprofile", "the seed's diffprofile: CPU profile of one benchmark under two policies, B - A per function", runBenchDiffProfile},
	{"scale", "the build scheduler's ns and bytes per task at 1k-1M tasks, no processes", runBenchScale},
	{"sim", "SIMULATION of the balancing policies on a dumped topology (--root DIR)", runBenchSim},
}

// runBench dispatches "numasteal bench NAME [flags]".
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return dispatchIn(ctx, "numasteal bench", benchmarks[:], benchUsage, args, stdout, stderr)
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
