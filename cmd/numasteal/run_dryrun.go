package main

import (
	"fmt"
	"io"
	"path/filepath"
	goruntime "runtime"

	"github.com/numasteal/numasteal/buildgraph"
)

// dryRun implements "numasteal run -n": it prints the command of every task
// in the order the run would start them, and runs none. The order is the
// scheduler's own (buildgraph.Scheduler: critical-path priority, the
// slots, memory and pool limits), with no process behind it: the tasks
// handed out are taken to end in the order they started, each as soon as
// nothing more can start. A task whose Cwd is set is printed as
// "cd DIR && COMMAND", so the output is a shell script of the build;
// with -C every task is, DIR absolute, so the script runs from anywhere.
func dryRun(w io.Writer, g *buildgraph.Graph, f runFlags, hist *buildgraph.History) error {
	slots := f.jobs
	if slots < 0 {
		slots = goruntime.NumCPU() // what the runtime's workers would be
	}
	sched, err := buildgraph.NewScheduler(g, buildgraph.Limits{Slots: slots, MemMB: f.memMB, KeepGoing: f.keepGoing}, hist)
	if err != nil {
		return err
	}
	var running []*buildgraph.Task // FIFO
	for !sched.Finished() {
		t, ok := sched.Next()
		if ok {
			running = append(running, t)
			if dir := dryRunDir(t.Cwd, f.dir); dir != "" {
				fmt.Fprintf(w, "cd %s && ", buildgraph.QuoteWords([]string{dir}))
			}
			if _, err := fmt.Fprintln(w, t.CommandLine()); err != nil {
				return err
			}
			continue
		}
		if len(running) == 0 {
			return fmt.Errorf("dry run: the schedule is stuck with nothing running") // NewScheduler rules this out
		}
		sched.Complete(running[0], buildgraph.Succeeded)
		running[0] = nil
		running = running[1:]
	}
	return nil
}

// dryRunDir is the directory a task's line of -n changes to: its Cwd,
// under the absolute directory of -C (base) if it has one, or base
// itself for a task with no Cwd; "" when neither is set.
func dryRunDir(cwd, base string) string {
	switch {
	case base == "" || filepath.IsAbs(cwd):
		return cwd
	case cwd == "":
		return base
	}
	return filepath.Join(base, cwd)
}
