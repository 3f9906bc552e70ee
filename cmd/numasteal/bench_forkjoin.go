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
	treeN := fs.Int("tree-n", 0, "nodes of the summed tree (0: 10M, or 2^N when N < 23; negative: skip)")
	sortN := fs.Int("sort-n", 0, "ints to merge-sort (0: 10M, or 2^N when N < 23; negative: skip)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	peers := fs.Bool("peers", false, "the workloads in Rayon, oneTBB and OpenMP as well, built here (bench/peers/README.md)")
	cutoff := fs.Int("cutoff", 12, "with --peers: the cutoff workload forks at n >= `C` only")
	sumN := fs.Int("sum-n", 100_000_000, "with --peers: int64s in the parallel sum")
	joins := fs.Int("joins", 1<<20, "with --peers: empty spawn+joins timed per run")
	peerCache := fs.String("peer-cache", "", "with --peers: keep the built peers in `DIR` for later runs (default: build them in a temporary directory, removed)")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if *peers {
		o := bench.PeersOptions{FibN: *n, Cutoff: *cutoff, SumN: *sumN, SortN: *sortN, Joins: *joins, CacheDir: *peerCache}
		if fs.Changed("reps") {
			o.Reps = *reps
		}
		return runBenchForkJoinPeers(ctx, o, *asJSON, *quiet, stdout, stderr)
	}
	opts := bench.ForkJoinOptions{N: *n, Reps: *reps, TreeN: *treeN, SortN: *sortN}
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
	if r.TreeN > 0 {
		fmt.Fprintf(stdout, "\ntree sum, %d nodes, a fork per node (Jobs)\n", r.TreeN)
		row := func(name string, ns float64) {
			fmt.Fprintf(stdout, "%-34s %12.2fms %9.2fx\n", name, ns/1e6, ns/r.TreeSumSerialNs)
		}
		row("serial recursion", r.TreeSumSerialNs)
		row("numasteal, 1 worker", r.TreeSum1WNs)
		row(fmt.Sprintf("numasteal, %d workers", r.Workers), r.TreeSumAllNs)
	}
	if r.SortN > 0 {
		fmt.Fprintf(stdout, "\nmerge sort, %d ints (Ctx.Join)\n", r.SortN)
		fmt.Fprintf(stdout, "%-34s %12.2fms %9.2fx\n", "slices.Sort", r.SortSerialNs/1e6, 1.0)
		fmt.Fprintf(stdout, "%-34s %12.2fms %9.2fx\n", "numasteal, 1 worker", r.Sort1WNs/1e6, r.Sort1WNs/r.SortSerialNs)
		fmt.Fprintf(stdout, "%-34s %12.2fms %9.2fx\n", fmt.Sprintf("numasteal, %d workers", r.Workers), r.SortAllNs/1e6, r.SortAllNs/r.SortSerialNs)
	}
	fmt.Fprintf(stdout, "\n%-34s %12.1fns\n", "local spawn+join (Ctx.Join)", r.SpawnJoinNs)
	fmt.Fprintf(stdout, "%-34s %12.1fns\n", "injected task submit->start", r.InjectLatencyNs)
	fmt.Fprintf(stdout, "\ngoroutines / numasteal(all) = %.1fx\n", r.GoroutinesNs/r.RuntimeAllNs)
	return exitOK
}

func runBenchForkJoinPeers(ctx context.Context, o bench.PeersOptions, asJSON, quiet bool, stdout, stderr io.Writer) int {
	if !quiet {
		o.Progress = progressLine(stderr)
	}
	r, err := bench.RunForkJoinPeers(ctx, o)
	clearProgress(stderr, quiet)
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench forkjoin --peers: %v\n", err)
		return exitFail
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(stderr, "numasteal bench forkjoin --peers: skipped %s: %s\n", s.Peer, s.Reason)
	}
	if asJSON {
		return writeJSON(stdout, r)
	}
	bench.WritePeersTable(stdout, r)
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
