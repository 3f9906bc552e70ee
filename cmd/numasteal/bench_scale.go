package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/numasteal/numasteal/bench"
)

// runBenchScale implements "numasteal bench scale": the build scheduler's
// own cost per task and memory per task, for growing graphs of three
// shapes, with no process run.
func runBenchScale(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal bench scale", stderr)
	ns := fs.StringP("n", "n", "1000,10000,100000,1000000", "comma-separated task counts")
	shapes := fs.String("shapes", strings.Join(bench.ScaleShapes, ","), "comma-separated graph shapes: "+strings.Join(bench.ScaleShapes, ", "))
	reps := fs.Int("reps", 5, "alternating rounds; medians are reported")
	noProgress := fs.Bool("no-progress", false, "do not read Progress after each completion")
	asJSON := fs.Bool("json", false, `print {"rows": [{"shape", "n", "ns_per_task", ...}]}`)
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	runs := fs.String("run", "", "instead: `numasteal run` of this many `true` commands, comma-separated counts (e.g. 10000,100000), alternated")
	jobs := fs.StringP("jobs", "j", "default", "with --run: comma-separated -j values for numasteal run, alternated (default: none given, one slot per CPU; e.g. default,0)")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	js, err := parseJobsList(*jobs)
	if err != nil {
		return usageError(fs, stderr, fmt.Errorf("--jobs: %w", err))
	}
	if *runs != "" {
		return benchScaleRuns(ctx, *runs, js, *reps, *asJSON, *quiet, stdout, stderr)
	}
	opts := bench.ScaleOptions{Reps: *reps, NoProgress: *noProgress, Shapes: strings.Split(*shapes, ",")}
	for _, f := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "numasteal bench scale: -n: bad task count %q\n", f)
			return exitUsage
		}
		opts.Ns = append(opts.Ns, n)
	}
	if !*quiet {
		opts.Progress = progressLine(stderr)
	}
	rows, err := bench.RunScale(ctx, opts)
	clearProgress(stderr, *quiet)
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench scale: %v\n", err)
		return exitFail
	}
	if *asJSON {
		return writeJSON(stdout, struct {
			Rows []bench.ScaleRow `json:"rows"`
		}{rows})
	}
	fmt.Fprintf(stdout, "%-8s %9s %10s %9s %10s %10s %10s %10s\n",
		"shape", "tasks", "ns/task", "vs first", "setup ns", "graph B", "sched B", "peakRSS B")
	var first float64
	for i, r := range rows {
		if i == 0 || rows[i-1].Shape != r.Shape {
			first = r.NsPerTask
		}
		fmt.Fprintf(stdout, "%-8s %9d %10.0f %8.2fx %10.0f %10.0f %10.0f %10.0f\n",
			r.Shape, r.N, r.NsPerTask, r.NsPerTask/first, r.SetupNsPerTask,
			r.GraphBytesPerTask, r.SchedBytesPerTask, r.PeakRSSBytesPerTask)
	}
	return exitOK
}

// benchScaleRuns is "numasteal bench scale --run N1,N2": wall and own CPU
// time and peak RSS per command of numasteal run over N true commands, at
// each -j of jobs (bench.DefaultJobs: none).
func benchScaleRuns(ctx context.Context, counts string, jobs []int, reps int, asJSON, quiet bool, stdout, stderr io.Writer) int {
	o := bench.ScaleRunOptions{Reps: reps, Jobs: jobs}
	for _, f := range strings.Split(counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(stderr, "numasteal bench scale: --run: bad command count %q\n", f)
			return exitUsage
		}
		o.Ns = append(o.Ns, n)
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench scale: finding this binary: %v\n", err)
		return exitFail
	}
	o.Numasteal = self
	dir, err := os.MkdirTemp("", "scale-run-")
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench scale: %v\n", err)
		return exitFail
	}
	defer os.RemoveAll(dir)
	o.Dir = dir
	show, done := benchStatus(stderr, quiet)
	o.Progress = show
	rows, err := bench.RunScaleRuns(ctx, o)
	done()
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench scale: %v\n", err)
		return exitFail
	}
	if asJSON {
		return writeJSON(stdout, struct {
			Rows []bench.ScaleRunRow `json:"rows"`
		}{rows})
	}
	fmt.Fprintf(stdout, "%7s %9s %14s %9s %16s %18s %12s\n", "-j", "commands", "wall µs/cmd", "vs first", "own CPU µs/cmd", "children µs/cmd", "peak RSS KiB")
	var first float64
	for i, r := range rows {
		if i == 0 || rows[i-1].Jobs != r.Jobs {
			first = r.WallUSPerTask
		}
		fmt.Fprintf(stdout, "%7s %9d %14.1f %8.2fx %16.1f %18.1f %12d\n", jobsName(r.Jobs), r.N, r.WallUSPerTask,
			r.WallUSPerTask/first, r.OwnCPUUS, r.ChildCPUUS, r.PeakRSSKiB)
	}
	return exitOK
}

// parseJobsList parses --jobs: comma-separated -j values, each a count of
// 0 or more or "default" (bench.DefaultJobs).
func parseJobsList(s string) ([]int, error) {
	var js []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "default" {
			js = append(js, bench.DefaultJobs)
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("bad -j %q (want 0 or more, or default)", f)
		}
		js = append(js, n)
	}
	return js, nil
}

// jobsName is a -j for the table: the number, or "default".
func jobsName(jobs int) string {
	if jobs == bench.DefaultJobs {
		return "default"
	}
	return strconv.Itoa(jobs)
}
