package bench

import (
	"fmt"
	"io"
	"strings"
)

// WriteSDETTable prints r in the seed's format: throughput at each N,
// numasteal as a percent of the baseline with its std dev.
func WriteSDETTable(w io.Writer, r *SDETResult) {
	fmt.Fprintf(w, "SDET: %d workers, numasteal slots %s, %gs per point, %d repetitions\nscript: %s\n\n", r.Workers, r.Slots, r.DurationS, r.Reps, r.Script)
	fmt.Fprintf(w, "%5s %22s %22s %28s\n", "N", "baseline scripts/h", "numasteal scripts/h", "numasteal % median (range)")
	for _, p := range r.Points {
		fmt.Fprintf(w, "%5d %14.0f ±%6.0f %14.0f ±%6.0f %12.1f%% (%.1f–%.1f%%)\n", p.N,
			p.BaselinePerHour, p.BaselineStdPerHour, p.NumastealPerHour, p.NumastealStdPerHour, p.Pct, p.PctMin, p.PctMax)
	}
	fmt.Fprintf(w, "\nmean wall time per command, µs: baseline / numasteal (numasteal ÷ baseline)\n")
	for _, p := range r.Points {
		fmt.Fprintf(w, "%5d ", p.N)
		for i, c := range p.Commands {
			if i > 0 {
				fmt.Fprint(w, ", ")
			}
			name, _, _ := strings.Cut(c.Command, " ")
			ratio := 0.0
			if c.BaselineUS > 0 {
				ratio = c.NumastealUS / c.BaselineUS
			}
			fmt.Fprintf(w, "%s %.0f / %.0f (%.2f)", name, c.BaselineUS, c.NumastealUS, ratio)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nCPU per finished script, ms, and the machine's idle share: baseline / numasteal\n")
	fmt.Fprintf(w, "%5s %17s %17s %17s\n", "N", "this process", "its commands", "idle")
	for _, p := range r.Points {
		fmt.Fprintf(w, "%5d %7.2f / %7.2f %7.2f / %7.2f %6.1f%% / %5.1f%%\n", p.N, p.BaselineSelfMS, p.NumastealSelfMS,
			p.BaselineChildrenMS, p.NumastealChildrenMS, p.BaselineIdlePct, p.NumastealIdlePct)
	}
}
