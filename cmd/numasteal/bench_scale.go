package main

import (
	"context"
	"fmt"
	"io"
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
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
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
