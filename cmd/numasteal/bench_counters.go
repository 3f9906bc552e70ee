package main

import (
	"context"
	"fmt"
	"io"

	"github.com/numasteal/numasteal/bench"
)

func runBenchCounters(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal bench counters", stderr)
	iters := fs.Int("iters", 50_000_000, "increments per measurement and thread")
	reps := fs.Int("reps", 5, "alternating rounds; medians are reported")
	asJSON := fs.Bool("json", false, `print {"rows": [{"name", "ns_per_op", "threads"}]}`)
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	opts := bench.CountersOptions{Iters: *iters, Reps: *reps}
	if !*quiet {
		opts.Progress = progressLine(stderr)
	}
	rows, err := bench.RunCounters(ctx, opts)
	clearProgress(stderr, *quiet)
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench counters: %v\n", err)
		return exitFail
	}
	if *asJSON {
		return writeJSON(stdout, struct {
			Rows []bench.CounterRow `json:"rows"`
		}{rows})
	}
	var plain float64
	for _, r := range rows {
		if r.Name == "plain uint64" {
			plain = r.NsPerOp
		}
	}
	fmt.Fprintf(stdout, "%-34s %8s %12s %12s\n", "counter", "threads", "ns/op", "vs uint64++")
	for _, r := range rows {
		fmt.Fprintf(stdout, "%-34s %8d %12.3f %11.2fx\n", r.Name, r.Threads, r.NsPerOp, r.NsPerOp/plain)
	}
	return exitOK
}
