package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/numasteal/numasteal/bench"
)

// runBenchMemory is "numasteal bench memory": a make project whose
// compiles each need more than half of a memory-limited cgroup, built in
// it by plain make at fixed -j and through numasteal-launch
// (bench.RunMemory). Where no memory cgroup can be made it says so and
// exits 0, having measured nothing.
func runBenchMemory(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal bench memory", stderr)
	limit := fs.Int("limit", 400, "the cgroup's memory limit in `MiB`")
	compiles := fs.Int("compiles", 12, "compiles of the make project")
	mib := fs.Int("mib", 250, "`MiB` each compile allocates")
	ms := fs.Int("ms", 800, "milliseconds each compile takes")
	jobs := fs.IntSlice("jobs", []int{1, 2, 4}, "the -j of the plain make rows")
	reps := fs.Int("reps", 3, "alternating rounds; medians are reported")
	launcher := fs.String("launcher", "", "the numasteal-launch binary (default: beside this one, else built with go build)")
	memhog := fs.String("memhog", "", "the memhog compiler (default: beside this one, else built with go build)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	for name, v := range map[string]int{"limit": *limit, "compiles": *compiles, "mib": *mib, "ms": *ms, "reps": *reps} {
		if v < 1 {
			return usageError(fs, stderr, fmt.Errorf("--%s %d: want at least 1", name, v))
		}
	}
	if len(*jobs) == 0 {
		return usageError(fs, stderr, errors.New("--jobs: want at least one -j"))
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench memory: finding this binary: %v\n", err)
		return exitFail
	}
	o := bench.MemoryOptions{
		LimitMiB: *limit, Compiles: *compiles, CompileMiB: *mib, CompileMS: *ms, Jobs: *jobs, Reps: *reps,
		Numasteal: self, Launcher: *launcher, Memhog: *memhog,
	}
	if err := bench.CheckMemory(o); err != nil {
		return usageError(fs, stderr, err)
	}
	progress, done := benchStatus(stderr, *quiet)
	o.Progress = func(p bench.MemoryProgress) {
		progress(fmt.Sprintf("repetition %d/%d: %s", p.Rep, p.Reps, p.Row))
	}
	r, err := bench.RunMemory(ctx, o)
	done()
	if errors.Is(err, bench.ErrNoMemoryCgroup) {
		fmt.Fprintf(stderr, "numasteal bench memory: SKIP: %v (it needs root, or a delegated cgroup v2 subtree with the memory controller)\n", err)
		if *asJSON {
			return writeJSON(stdout, map[string]string{"skipped": err.Error()})
		}
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench memory: %v\n", err)
		return exitFail
	}
	if *asJSON {
		return writeJSON(stdout, r)
	}
	writeMemoryTable(stdout, r)
	return exitOK
}

// writeMemoryTable prints r as a table, with the load and the goal.
func writeMemoryTable(w io.Writer, r *bench.MemoryResult) {
	v := "v1"
	if r.CgroupV2 {
		v = "v2"
	}
	fmt.Fprintf(w, "%d compiles of %d MiB, %d ms each, in a cgroup %s limited to %d MiB; make -k; %d alternating rounds\n",
		r.Compiles, r.CompileMiB, r.CompileMS, v, r.LimitMiB, r.Reps)
	fmt.Fprintf(w, "load average: %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end\n\n",
		r.LoadStart[0], r.LoadStart[1], r.LoadStart[2], r.LoadEnd[0], r.LoadEnd[1], r.LoadEnd[2])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "contender\tcompleted\tobjects built\tOOM kills\tfailed jobs\twall median\trange\tvs best -j")
	for _, row := range r.Rows {
		completed := "no"
		switch {
		case row.Completed == len(row.Runs):
			completed = "yes"
		case row.Completed > 0:
			completed = fmt.Sprintf("%d of %d runs", row.Completed, len(row.Runs))
		}
		var built, kills, failed []int64
		for _, run := range row.Runs {
			built = append(built, int64(run.Built))
			kills = append(kills, run.OOMKills)
			failed = append(failed, int64(run.Failed))
		}
		ratio := "-"
		if row.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f×", row.Ratio)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s / %d\t%s\t%s\t%.1f s\t%.1f–%.1f s\t%s\n", row.Name, completed,
			spread(built), r.Compiles, spread(kills), spread(failed), row.WallS, row.MinS, row.MaxS, ratio)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if r.BestFixed == "" {
		fmt.Fprintln(w, "no plain make row completed every run: no ratio")
	} else {
		fmt.Fprintf(w, "best fixed -j that completed: %s\n", r.BestFixed)
	}
	verdict := "not met"
	if r.GoalMet {
		verdict = "met"
	}
	fmt.Fprintf(w, "goal (every run through numasteal, launcher and numasteal run, builds every object with 0 failed jobs, wall ≤ %.2f× the best fixed -j): %s\n", bench.GoalRatio, verdict)
	if r.Launcher == "" {
		fmt.Fprintln(w, "launcher: numasteal-launch built from this source tree with go build")
	} else {
		fmt.Fprintf(w, "launcher: %s\n", r.Launcher)
	}
}

// spread returns "N" when every run gave N, else "MIN–MAX" over runs.
func spread(xs []int64) string {
	if len(xs) == 0 {
		return "-"
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	if lo == hi {
		return fmt.Sprint(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}
