package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/buildrun"
)

// failureTail bounds how much of each stream of a failed task is shown.
const failureTail = 16 << 10

// printFailures shows each failed task: its error, its command, and the end
// of its output.
func printFailures(w io.Writer, rep *buildrun.Report) {
	for _, tr := range rep.Failed() {
		fmt.Fprintf(w, "FAILED: %s: %v\n", tr.Task.ID, tr.Proc.Err)
		if !tr.Task.Pos.IsZero() {
			fmt.Fprintf(w, "  (%s)\n", tr.Task.Pos)
		}
		fmt.Fprintf(w, "$ %s\n", tr.Task.CommandLine())
		for _, o := range []struct {
			name string
			len  int64
			tail func(int) ([]byte, error)
		}{
			{"stdout", tr.Proc.Stdout.Len(), tr.Proc.Stdout.Tail},
			{"stderr", tr.Proc.Stderr.Len(), tr.Proc.Stderr.Tail},
		} {
			if o.len == 0 {
				continue
			}
			b, err := o.tail(failureTail)
			if err != nil {
				fmt.Fprintf(w, "(%s unreadable: %v)\n", o.name, err)
				continue
			}
			if o.len > int64(len(b)) {
				fmt.Fprintf(w, "(... %d earlier bytes of %s not shown)\n", o.len-int64(len(b)), o.name)
			}
			w.Write(b)
			if !bytes.HasSuffix(b, []byte("\n")) {
				fmt.Fprintln(w)
			}
		}
	}
}

// printSummary prints the outcome counts and the kernbench columns:
// Elapsed, System and User seconds, and Percent CPU.
func printSummary(w io.Writer, rep *buildrun.Report) {
	var parts []string
	for o := buildgraph.Succeeded; o < buildgraph.NumOutcomes; o++ {
		if n := rep.Counts[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %v", n, o))
		}
	}
	if len(parts) == 0 {
		parts = []string{"no tasks"}
	}
	fmt.Fprintf(w, "%d tasks: %s\n", len(rep.Tasks), strings.Join(parts, ", "))
	fmt.Fprintf(w, "%10s %10s %10s %6s\n", "Elapsed", "System", "User", "CPU%")
	fmt.Fprintf(w, "%10s %10s %10s %6.0f\n", secs(rep.Elapsed), secs(rep.Sys), secs(rep.User), rep.CPUPercent())
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }
