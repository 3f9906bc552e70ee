package bench

import (
	"fmt"
	"io"
	"strconv"
)

// WriteNativeTable prints r in the style of WriteKernbenchTable: one row
// per contender, Elapsed, System, User (seconds), CPU (percent), User+Sys
// and the daemon's own CPU time, all medians; then the ratios, with the
// verdict of those that have a target.
func WriteNativeTable(w io.Writer, r *NativeResult) {
	fmt.Fprintf(w, "kernbench: %s, native build, %d CPUs, median of %d runs\nlauncher: %s\n\n", r.Corpus, r.CPUs, r.Reps, r.Launcher)
	fmt.Fprintf(w, "%-34s %9s %9s %9s %6s %10s %8s\n", "build", "Elapsed", "System", "User", "CPU", "User+Sys", "Daemon")
	for _, row := range r.Rows {
		daemon := ""
		if row.Launcher {
			daemon = fmt.Sprintf("%8.2f", row.DaemonS)
		}
		fmt.Fprintf(w, "%-34s %9.2f %9.2f %9.2f %5.0f%% %10.2f %8s\n", nativeRowLabel(row), row.ElapsedS, row.SysS, row.UserS, row.CPUPct, row.UserS+row.SysS, daemon)
	}
	fmt.Fprintln(w)
	for _, t := range r.Ratios {
		if t.Limit == 0 {
			fmt.Fprintf(w, "%-58s %.3f\n", t.Name, t.Ratio)
			continue
		}
		verdict := "MET"
		if t.Verdict != "met" {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "%-58s %.3f (target <= %.2f) %s\n", t.Name, t.Ratio, t.Limit, verdict)
	}
	fmt.Fprintln(w, "\n(user+sys ratios count the daemon's CPU time with the launcher row's; a pair's elapsed is until its later build ended)")
}

// nativeRowLabel names a row in the table: the tool, its -j, whether the
// launcher ran, and "2 x" for a pair ("make -j 4", "numasteal exec make
// -j +launcher", "2 x ninja"). make runs under numasteal exec with the
// launcher (makeContenders).
func nativeRowLabel(row NativeRow) string {
	s := row.Runner
	if row.Launcher && row.Runner == RunnerMake {
		s = "numasteal exec " + s
	}
	switch {
	case row.J == 0:
		s += " -j"
	case row.J > 0:
		s += " -j " + strconv.Itoa(row.J)
	}
	if row.Launcher {
		s += " +launcher"
	}
	if row.Builds > 1 {
		s = strconv.Itoa(row.Builds) + " x " + s
	}
	return s
}
