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
// command, against the plain command and the exec-only C and Go floors,
// contenders alternated; with --waiting, the memory and threads of the
// launchers a ninja -j build leaves waiting for a slot.
func runBenchLaunch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal bench launch", stderr)
	rounds := fs.Int("rounds", 500, "runs of each contender")
	launcher := fs.String("launcher", "", "the numasteal-launch binary (default: beside this one)")
	cc := fs.String("cc", "gcc", "the compiler of the trivial compile")
	gocmd := fs.String("go", "go", "the go command that builds the Go floor")
	waiting := fs.Bool("waiting", false, "measure the launchers waiting for a slot under ninja -j instead")
	compiles := fs.Int("compiles", 1000, "with --waiting: the C files of the project")
	jobs := fs.Int("jobs", 256, "with --waiting: ninja's -j")
	noCMake := fs.Bool("no-cmake", false, "with --waiting: a build.ninja of the benchmark's own, not CMake's")
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
	if *waiting {
		return benchLaunchWait(ctx, bench.LaunchWaitOptions{
			Launcher: *launcher, Numasteal: self, Dir: dir, Compiles: *compiles, Jobs: *jobs, CC: *cc, NoCMake: *noCMake,
		}, *asJSON, *quiet, stdout, stderr)
	}
	progress, done := benchStatus(stderr, *quiet)
	r, err := bench.RunLaunchCost(ctx, bench.LaunchCostOptions{
		Launcher: *launcher, Numasteal: self, Rounds: *rounds, Dir: dir, CC: *cc, Go: *gocmd,
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
	if len(r.OverCompile) > 0 {
		fmt.Fprintln(stdout)
		fmt.Fprintf(stdout, "in front of the trivial compile (%.0f µs), %% of it (median of per-round differences, p25–p75):\n", r.CompileUS)
		for _, sh := range r.OverCompile {
			fmt.Fprintf(stdout, "  %-40s %+6.1f%%  (%+.1f – %+.1f)\n", sh.Name, sh.Median, sh.P25, sh.P75)
		}
	}
	if r.OwnPoints != nil {
		fmt.Fprintf(stdout, "numasteal's own work per launch (launcher less the Go floor): %+.1f points (%+.1f – %+.1f; target ≤ 3)\n",
			r.OwnPoints.Median, r.OwnPoints.P25, r.OwnPoints.P75)
	}
	if r.OwnTrueUS != [3]float64{} {
		fmt.Fprintf(stdout, "numasteal's own work per launch on /bin/true (handoff less the Go floor): %.0f µs (%.0f – %.0f)", r.OwnTrueUS[0], r.OwnTrueUS[1], r.OwnTrueUS[2])
		if r.CompileUS > 0 {
			fmt.Fprintf(stdout, ", %.1f points of this run's trivial compile", 100*r.OwnTrueUS[0]/r.CompileUS)
		}
		fmt.Fprintln(stdout)
	}
	for _, m := range r.Missing {
		fmt.Fprintf(stdout, "left out: %s\n", m)
	}
	return exitOK
}

// benchLaunchWait is "numasteal bench launch --waiting".
func benchLaunchWait(ctx context.Context, o bench.LaunchWaitOptions, asJSON, quiet bool, stdout, stderr io.Writer) int {
	progress, done := benchStatus(stderr, quiet)
	progress(fmt.Sprintf("ninja -j %d, %d compiles", o.Jobs, o.Compiles))
	r, err := bench.RunLaunchWait(ctx, o)
	done()
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench launch: %v\n", err)
		return exitFail
	}
	if asJSON {
		return writeJSON(stdout, r)
	}
	fmt.Fprintf(stdout, "ninja -j %d, %d compiles (%s): %d objects in %.1f s\n", r.Jobs, r.Compiles, r.Generator, r.Built, r.WallS)
	fmt.Fprintf(stdout, "launchers waiting: at most %d; %d samples with at least half that many\n", r.MostWaiting, len(r.Samples))
	fmt.Fprintln(stdout, "per waiting launcher (sum over the waiting launchers / their count; median, least – most of the samples):")
	fmt.Fprintf(stdout, "  PSS            %7.0f KiB  (%.0f – %.0f; target ≤ 1024)\n", r.PssKiB[0], r.PssKiB[1], r.PssKiB[2])
	fmt.Fprintf(stdout, "  private dirty  %7.0f KiB  (%.0f – %.0f)\n", r.PrivateDirtyKiB[0], r.PrivateDirtyKiB[1], r.PrivateDirtyKiB[2])
	fmt.Fprintf(stdout, "  RSS            %7.0f KiB  (%.0f – %.0f)\n", r.RssKiB[0], r.RssKiB[1], r.RssKiB[2])
	fmt.Fprintf(stdout, "  threads        %7.2f      (%.2f – %.2f; most of one launcher: %d)\n", r.Threads[0], r.Threads[1], r.Threads[2], r.MaxThreads)
	return exitOK
}
