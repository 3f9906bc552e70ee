package bench

import (
	"fmt"
	"io"
)

// WriteSDETTable prints r in the seed's format: throughput at each N,
// numasteal as a percent of the baseline with its std dev.
func WriteSDETTable(w io.Writer, r *SDETResult) {
	fmt.Fprintf(w, "SDET: %d workers, numasteal slots %s, %gs per point, %d repetitions\nscript: %s\n\n", r.Workers, r.Slots, r.DurationS, r.Reps, r.Script)
	fmt.Fprintf(w, "%5s %22s %22s %20s\n", "N", "baseline scripts/h", "numasteal scripts/h", "numasteal % (std)")
	for _, p := range r.Points {
		fmt.Fprintf(w, "%5d %14.0f ±%6.0f %14.0f ±%6.0f %12.1f%% (%4.1f%%)\n", p.N,
			p.BaselinePerHour, p.BaselineStdPerHour, p.NumastealPerHour, p.NumastealStdPerHour, p.Pct, p.PctStd)
	}
}
