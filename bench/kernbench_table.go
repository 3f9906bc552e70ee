package bench

import (
	"fmt"
	"io"
	"strings"
)

// WriteKernbenchTable prints r as the seed's table: one row per runner and
// -j level, Elapsed, System, User (seconds) and CPU (percent), all medians,
// plus user+sys, and the two targets numasteal is held to.
func WriteKernbenchTable(w io.Writer, r *KernbenchResult) {
	fmt.Fprintf(w, "kernbench: %s, %d tasks (%d compiles), %d CPUs, median of %d runs\n\n", r.Corpus, r.Tasks, r.Compiles, r.CPUs, r.Reps)
	fmt.Fprintf(w, "%-10s %-10s %9s %9s %9s %6s %10s\n", "runner", "-j", "Elapsed", "System", "User", "CPU", "User+Sys")
	for _, row := range r.Rows {
		j := fmt.Sprintf("%s (%d)", row.Jobs, row.J)
		if row.J == 0 {
			j = "max (inf)"
		}
		fmt.Fprintf(w, "%-10s %-10s %9.2f %9.2f %9.2f %5.0f%% %10.2f\n", row.Runner, j, row.ElapsedS, row.SysS, row.UserS, row.CPUPct, row.UserS+row.SysS)
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "\nskipped (not installed): %s\n", strings.Join(r.Skipped, ", "))
	}
	for _, t := range r.Targets() {
		verdict := "MET"
		if !t.Met {
			verdict = "MISSED"
		}
		fmt.Fprintf(w, "\n%-44s %.3f (target <= %.2f) %s", t.Name, t.Ratio, t.Limit, verdict)
	}
	fmt.Fprintln(w)
}

// KernbenchTarget is one of the ratios numasteal must reach.
type KernbenchTarget struct {
	Name  string  `json:"name"`
	Ratio float64 `json:"ratio"`
	Limit float64 `json:"limit"`
	Met   bool    `json:"met"`
}

// Targets returns kernbench's two targets, where their rows exist:
// numasteal at max ≤ 1.05× numasteal at 2x, and ≤ 0.95× make at max
// (elapsed medians).
func (r *KernbenchResult) Targets() []KernbenchTarget {
	var out []KernbenchTarget
	nmax, ok := r.Row(RunnerNumasteal, "max")
	if !ok || nmax.ElapsedS == 0 {
		return nil
	}
	add := func(name string, base KernbenchRow, ok bool, limit float64) {
		if ok && base.ElapsedS > 0 {
			ratio := nmax.ElapsedS / base.ElapsedS
			out = append(out, KernbenchTarget{Name: name, Ratio: ratio, Limit: limit, Met: ratio <= limit})
		}
	}
	n2, ok2 := r.Row(RunnerNumasteal, "2x")
	add("numasteal max / numasteal 2x (elapsed)", n2, ok2, 1.05)
	m, okm := r.Row(RunnerMake, "max")
	add("numasteal max / make max (elapsed)", m, okm, 0.95)
	return out
}
