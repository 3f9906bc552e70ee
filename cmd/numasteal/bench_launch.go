package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"

	"github.com/numasteal/numasteal/bench"
)

// runBenchLaunch is "numasteal bench launch": the launcher's cost per
// command, against the plain command, contenders alternated.
func runBenchLaunch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal bench launch", stderr)
	rounds := fs.Int("rounds", 500, "runs of each contender")
	launcher := fs.String("launcher", "", "the numasteal-launch binary (default: beside this one)")
	cc := fs.String("cc", "gcc", "the compiler of the trivial compile")
	asJSON := fs.Bool("json", false, "print one JSON object")
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if *rounds < 1 {
		fmt.Fprintln(stderr, "numasteal bench launch: --rounds must be at least 1")
		return exitUsage
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench launch: finding this binary: %v\n", err)
		return exitFail
	}
	if *launcher == "" {
		*launcher = filepath.Join(filepath.Dir(self), "numasteal-launch")
	}
	if st, err := os.Stat(*launcher); err != nil || !st.Mode().IsRegular() {
		fmt.Fprintf(stderr, "numasteal bench launch: no launcher at %s (go build -o %s ./cmd/numasteal-launch, or --launcher)\n",
			*launcher, filepath.Dir(self))
		return exitUsage
	}
	dir, err := os.MkdirTemp("", "nsbl-") // short: a socket path is at most 108 bytes
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench launch: %v\n", err)
		return exitFail
	}
	defer os.RemoveAll(dir)
	progress, done := benchStatus(stderr, *quiet)
	r, err := bench.RunLaunchCost(ctx, bench.LaunchCostOptions{
		Launcher: *launcher, Numasteal: self, Rounds: *rounds, Dir: dir, CC: *cc,
		Progress: func(i, n int) {
			if i%10 == 0 || i == n {
				progress(fmt.Sprintf("round %d/%d", i, n))
			}
		},
	})
	done()
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench launch: %v\n", err)
		return exitFail
	}
	if *asJSON {
		return writeJSON(stdout, r)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "contender (%d rounds, alternated)\t median µs\t    p25\t    p75\t  cpu µs\n", r.Rounds)
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%10.0f\t%7.0f\t%7.0f\t%8.0f\n", row.Name, row.WallUS, row.P25US, row.P75US, row.CPUUS)
	}
	tw.Flush()
	fmt.Fprintln(stdout)
	names := make([]string, 0, len(r.Overheads))
	for n := range r.Overheads {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(stdout, "overhead of %s: %.0f µs (median of per-round differences)\n", n, r.Overheads[n])
	}
	if r.CompilePercent > 0 {
		fmt.Fprintf(stdout, "launcher overhead on the trivial compile: %.1f%% (target ≤ 10%%)\n", r.CompilePercent)
	}
	return exitOK
}
