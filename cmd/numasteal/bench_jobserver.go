package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/numasteal/numasteal/bench"
)

// runBenchJobserver is "numasteal bench jobserver": what make forks
// (bench.RunJobserver): a project of ready compiles built through the
// launcher by make -j and numasteal exec make -j, with numasteal's peak
// PSS and launchers alive.
func runBenchJobserver(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal bench jobserver", stderr)
	compiles := fs.Int("compiles", 1000, "ready compiles in the project")
	reps := fs.Int("reps", 1, "alternating rounds; medians are reported")
	launcher := fs.String("launcher", "", "the numasteal-launch binary (default: beside this one)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	for name, v := range map[string]int{"compiles": *compiles, "reps": *reps} {
		if v < 1 {
			return usageError(fs, stderr, fmt.Errorf("--%s %d: want at least 1", name, v))
		}
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench jobserver: finding this binary: %v\n", err)
		return exitFail
	}
	if *launcher == "" {
		*launcher = filepath.Join(filepath.Dir(self), "numasteal-launch")
	}
	progress, done := benchStatus(stderr, *quiet)
	r, err := bench.RunJobserver(ctx, bench.JobserverOptions{
		Compiles: *compiles, Reps: *reps, Numasteal: self, Launcher: *launcher,
		Progress: func(rep int, row string) { progress(fmt.Sprintf("round %d/%d: %s", rep, *reps, row)) },
	})
	done()
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench jobserver: %v\n", err)
		return exitFail
	}
	if *asJSON {
		return writeJSON(stdout, r)
	}
	fmt.Fprintf(stdout, "%d ready compiles through numasteal-launch, %d rounds; load average %.2f %.2f %.2f at the start\n\n",
		r.Compiles, *reps, r.Load[0], r.Load[1], r.Load[2])
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "started as\tobjects\twall\tpeak launchers\tpeak PSS, numasteal's processes\tdaemon PSS\tPSS per launcher\tthreads per launcher")
	for _, row := range r.Rows {
		m := row.Median
		fmt.Fprintf(tw, "%s\t%d\t%.1f s\t%d\t%.1f MB\t%.1f MB\t%.0f kB\t%.1f\n",
			row.Row, m.Built, m.WallS, m.PeakLaunch, m.PeakPSSMB, m.DaemonPSSMB, m.PerLaunchKB, m.ThreadsEach)
	}
	tw.Flush()
	return exitOK
}
