package buildrun

import (
	"context"
	"fmt"
	goruntime "runtime"
	"strconv"
	"testing"

	"github.com/numasteal/numasteal/buildgraph"
)

// Under ReleaseSucceeded, Progress still sees every task's process and its
// whole output; the Report keeps the process of the failed task only, and
// its output for printing; the CPU times still count every process.
func TestRunReleaseSucceeded(t *testing.T) {
	rt := newRuntime(t)
	for _, slots := range []int{2, 0} {
		g := &buildgraph.Graph{}
		for i := range 8 {
			g.Tasks = append(g.Tasks, &buildgraph.Task{ID: "t" + strconv.Itoa(i), Shell: fmt.Sprintf("seq 1 %d; echo err%d >&2", 100*i+1, i)})
		}
		g.Tasks = append(g.Tasks, &buildgraph.Task{ID: "bad", Shell: "echo broken >&2; exit 3"})
		var problems []string
		seen := map[string]bool{}
		progress := func(s Status) {
			tr := s.Last
			if tr == nil {
				return
			}
			seen[tr.Task.ID] = true
			if tr.Proc == nil {
				problems = append(problems, tr.Task.ID+": reported without its process")
				return
			}
			if tr.Task.ID == "bad" {
				return
			}
			var i int
			fmt.Sscanf(tr.Task.ID, "t%d", &i)
			var want []byte
			for k := 1; k <= 100*i+1; k++ {
				want = strconv.AppendInt(want, int64(k), 10)
				want = append(want, '\n')
			}
			if out, err := tr.Proc.Stdout.Bytes(); err != nil || string(out) != string(want) {
				problems = append(problems, fmt.Sprintf("%s: stdout %d bytes, %v; want %d", tr.Task.ID, len(out), err, len(want)))
			}
			if out, err := tr.Proc.Stderr.Bytes(); err != nil || string(out) != fmt.Sprintf("err%d\n", i) {
				problems = append(problems, fmt.Sprintf("%s: stderr %q, %v", tr.Task.ID, out, err))
			}
		}
		rep, err := Run(context.Background(), rt, g, opts(Options{Slots: slots, KeepGoing: true, Progress: progress, ReleaseSucceeded: true}))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("slots %d: %s", slots, p)
		}
		if len(seen) != len(g.Tasks) {
			t.Errorf("slots %d: %d tasks reported, want %d", slots, len(seen), len(g.Tasks))
		}
		if len(rep.Tasks) != len(g.Tasks) || rep.Counts[buildgraph.Succeeded] != 8 || rep.Counts[buildgraph.Failed] != 1 {
			t.Fatalf("slots %d: %d results, counts %v", slots, len(rep.Tasks), rep.Counts)
		}
		for i, tr := range rep.Tasks {
			if tr.Task != g.Tasks[i] {
				t.Errorf("slots %d: result %d is %s, want graph order", slots, i, tr.Task.ID)
			}
			if succeeded := tr.Outcome == buildgraph.Succeeded; (tr.Proc == nil) != succeeded {
				t.Errorf("slots %d: %s %v with process %v", slots, tr.Task.ID, tr.Outcome, tr.Proc != nil)
			}
			if tr.Start.IsZero() || tr.End.Before(tr.Start) {
				t.Errorf("slots %d: %s ran %v to %v", slots, tr.Task.ID, tr.Start, tr.End)
			}
		}
		bad := rep.Failed()
		if len(bad) != 1 {
			t.Fatalf("slots %d: failures %v", slots, bad)
		}
		if out, err := bad[0].Proc.Stderr.Bytes(); err != nil || string(out) != "broken\n" {
			t.Errorf("slots %d: the failure's stderr %q, %v", slots, out, err)
		}
		if rep.User+rep.Sys <= 0 {
			t.Errorf("slots %d: CPU times %v + %v, want every process's", slots, rep.User, rep.Sys)
		}
		if err := rep.Close(); err != nil {
			t.Error(err)
		}
	}
	requireNoChildren(t)
}

// Under ReleaseSucceeded a run holds nothing per succeeded task: the heap
// left after a collection grows, between an early report and the last,
// by far less per task than a task's process result (a proc.Result and
// its two Outputs are over 500 bytes), at -j 2 and at -j 0. The heap is
// counted, not timed, so the bound holds on a busy machine.
func TestRunReleaseSucceededBoundsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 2 x 1500 processes")
	}
	const n, early = 1500, 150
	const maxPerTask = 150 // bytes; the graph and the scheduler are made before the first count
	rt := newRuntime(t)
	for _, slots := range []int{2, 0} {
		g := &buildgraph.Graph{}
		for i := range n {
			g.Tasks = append(g.Tasks, &buildgraph.Task{ID: "t" + strconv.Itoa(i), Cmd: []string{"true"}})
		}
		var first, last uint64
		progress := func(s Status) {
			switch s.Finished() {
			case early:
				first = liveHeap()
			case n:
				last = liveHeap()
			}
		}
		rep, err := Run(context.Background(), rt, g, opts(Options{Slots: slots, Progress: progress, ReleaseSucceeded: true}))
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() {
			t.Fatalf("slots %d: counts %v", slots, rep.Counts)
		}
		rep.Close()
		perTask := (int64(last) - int64(first)) / (n - early)
		t.Logf("slots %d: live heap %d -> %d bytes, %d bytes a task", slots, first, last, perTask)
		if perTask > maxPerTask {
			t.Errorf("slots %d: the live heap grew by %d bytes a task over %d tasks, want at most %d", slots, perTask, n-early, maxPerTask)
		}
	}
}

// liveHeap returns the heap in use after a full collection.
func liveHeap() uint64 {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapAlloc
}
