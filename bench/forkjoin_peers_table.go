package bench

import (
	"fmt"
	"io"
)

// WritePeersTable prints r as one Markdown table: every runtime on every
// workload, medians with their ranges over the rounds, then the peers
// that were skipped and why.
func WritePeersTable(w io.Writer, r PeersResult) {
	n := r.Threads
	fmt.Fprintf(w, "fork-join against peers: median (range) of %d alternating rounds; 1 thread: CPU time, pinned to CPU %d;"+
		" %d threads: wall time; ×serial: over the language's own serial loop in the same round\n", r.Reps, r.PinnedCPU, n)
	fmt.Fprintf(w, "waited for a CPU: the process's threads' run-queue wait in the %d-thread run over its wall time, summed"+
		" over threads (can exceed 100%%); where it is not small, that wall time measured the machine's load as well\n", n)
	fmt.Fprintf(w, "load average %.2f %.2f %.2f before, %.2f %.2f %.2f after\n\n",
		r.LoadStart[0], r.LoadStart[1], r.LoadStart[2], r.LoadEnd[0], r.LoadEnd[1], r.LoadEnd[2])
	fmt.Fprintf(w, "| workload | runtime | serial | 1 thread ×serial | 1 thread ns/fork | %d threads ×serial | %d threads ns/fork | %d threads: waited for a CPU |\n", n, n, n)
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
	last := ""
	for _, row := range r.Rows {
		name := ""
		if row.Workload != last {
			name, last = workloadTitle(row.Workload, r), row.Workload
		}
		serial := "—"
		if row.SerialNs.N > 0 {
			serial = fmt.Sprintf("%.2f ms", row.SerialNs.Median/1e6)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", name, row.Runtime, serial,
			statCell(row.Ratio1, "×", 2), statCell(row.NsPerFork1, "", 1),
			statCell(row.RatioN, "×", 2), statCell(row.NsPerForkN, "", 1), waitCell(row.WaitN))
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "\nskipped %s: %s", s.Peer, s.Reason)
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintln(w)
	}
}

func workloadTitle(workload string, r PeersResult) string {
	switch workload {
	case "fib":
		return fmt.Sprintf("fib(%d), a fork per call (%d forks)", r.FibN, r.FibForks)
	case "cutoff":
		return fmt.Sprintf("fib(%d), forks at n ≥ %d (%d forks)", r.FibN, r.Cutoff, r.CutoffForks)
	case "sum":
		return fmt.Sprintf("sum of %s int64", count(r.SumN))
	case "sort":
		return fmt.Sprintf("merge sort of %s ints", count(r.SortN))
	case "spawn":
		return fmt.Sprintf("empty spawn+join (ns/fork: per join, %s joins)", count(r.Joins))
	}
	return workload
}

// count writes n compactly: 100M, 10M, 64K, or the number.
func count(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1<<10 && n%(1<<10) == 0 && n < 1_000_000:
		return fmt.Sprintf("%dKi", n>>10)
	}
	return fmt.Sprint(n)
}

func statCell(s Stat, unit string, prec int) string {
	if s.N == 0 {
		return "—"
	}
	return fmt.Sprintf("%.*f%s (%.*f–%.*f)", prec, s.Median, unit, prec, s.Min, prec, s.Max)
}

func waitCell(s Stat) string {
	if s.N == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f%% (≤ %.0f%%)", 100*s.Median, 100*s.Max)
}
