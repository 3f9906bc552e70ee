package main

import (
	"context"
	"fmt"
	"io"

	"github.com/numasteal/numasteal/bench"
)

func runBenchForkJoin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal bench forkjoin", stderr)
	n := fs.IntP("n", "n", 30, "compute fib(`N`)")
	reps := fs.Int("reps", 7, "alternating rounds; medians are reported")
	asJSON := fs.Bool("json", false, "print one JSON object")
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	opts := bench.ForkJoinOptions{N: *n, Reps: *reps}
	if !*quiet {
		opts.Progress = progressLine(stderr)
	}
	r, err := bench.RunForkJoin(ctx, opts)
	clearProgress(stderr, *quiet)
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench forkjoin: %v\n", err)
		return exitFail
	}
	if *asJSON {
		return writeJSON(stdout, r)
	}
	fmt.Fprintf(stdout, "fib(%d), one task per call, %d workers, median of %d alternating runs\n\n", r.FibN, r.Workers, r.Reps)
	fmt.Fprintf(stdout, "%-34s %14s %10s\n", "contender", "time", "vs serial")
	row := func(name string, ns float64) {
		fmt.Fprintf(stdout, "%-34s %12.2fms %9.1fx\n", name, ns/1e6, ns/r.SerialNs)
	}
	row("serial recursion", r.SerialNs)
	row("numasteal, 1 worker", r.Runtime1WNs)
	row(fmt.Sprintf("numasteal, %d workers", r.Workers), r.RuntimeAllNs)
	row("goroutine per call + WaitGroup", r.GoroutinesNs)
	row("errgroup per call", r.ErrgroupNs)
	fmt.Fprintf(stdout, "\n%-34s %12.1fns\n", "local spawn+join (Ctx.Join)", r.SpawnJoinNs)
	fmt.Fprintf(stdout, "%-34s %12.1fns\n", "injected task submit->start", r.InjectLatencyNs)
	fmt.Fprintf(stdout, "\ngoroutines / numasteal(all) = %.1fx\n", r.GoroutinesNs/r.RuntimeAllNs)
	return exitOK
}

// progressLine returns a Progress callback that rewrites one status line.
func progressLine(w io.Writer) func(name string, rep, reps int) {
	return func(name string, rep, reps int) {
		fmt.Fprintf(w, "\r\033[Krunning %-36s repetition %d/%d", name, rep, reps)
	}
}

func clearProgress(w io.Writer, quiet bool) {
	if !quiet {
		fmt.Fprint(w, "\r\033[K")
	}
}
