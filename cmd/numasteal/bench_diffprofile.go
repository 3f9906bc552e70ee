package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/numasteal/numasteal/bench"
)

func runBenchDiffProfile(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal bench diffprofile", stderr)
	a := fs.StringP("a", "a", "local", "policy of configuration A (hierarchical, flat, local)")
	b := fs.StringP("b", "b", "hierarchical", "policy of configuration B")
	n := fs.IntP("n", "n", 30, "profile fib(`N`) with a task per call")
	rounds := fs.Int("rounds", 30, "fib runs profiled per configuration")
	top := fs.Int("top", 15, "gains and losses shown (0: all)")
	out := fs.StringP("out", "o", "", "also write the two pprof profiles into this directory (a.pprof, b.pprof)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	show, done := benchStatus(stderr, *quiet)
	show(fmt.Sprintf("diffprofile: profiling fib(%d) x %d under %s, then %s", *n, *rounds, *a, *b))
	r, err := bench.RunDiffProfile(ctx, bench.DiffProfileOptions{A: *a, B: *b, FibN: *n, Rounds: *rounds})
	done()
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench diffprofile: %v\n", err)
		return exitFail
	}
	if *out != "" {
		for i, name := range []string{"a.pprof", "b.pprof"} {
			if err := os.WriteFile(filepath.Join(*out, name), r.Profiles[i], 0o644); err != nil {
				fmt.Fprintf(stderr, "numasteal bench diffprofile: %v\n", err)
				return exitFail
			}
		}
	}
	if *asJSON {
		return writeJSON(stdout, r)
	}
	fmt.Fprintf(stdout, "diffprofile: %s\nA = %s: %d samples, %.2fs\nB = %s: %d samples, %.2fs\nperf: %s\n\n",
		r.Benchmark, r.A, r.ATotal, r.AWall, r.B, r.BTotal, r.BWall, r.Perf)
	fmt.Fprintln(stdout, "B - A, flat samples (10ms each); gains first, losses last:")
	bench.WriteDiffProfile(stdout, r.Rows, *top)
	return exitOK
}
