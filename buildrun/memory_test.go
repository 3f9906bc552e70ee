package buildrun

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/farm/compile"
	"github.com/numasteal/numasteal/memory"
	"github.com/numasteal/numasteal/proc"
)

func newGate(t *testing.T, hist *buildgraph.History, budget int64) *memGate {
	t.Helper()
	src, err := memory.Open("/", 0)
	if err != nil {
		t.Fatal(err)
	}
	return newMemGate(&MemoryOptions{Source: src, Thresholds: memory.Thresholds{Budget: budget}}, hist, nil)
}

// A task's need: declared, else its History peak, else the run's own
// tasks of its kind once one has finished (or what one holds now, when
// more), else a first guess by kind.
func TestMemoryNeed(t *testing.T) {
	hist := buildgraph.NewHistory()
	known := &buildgraph.Task{ID: "known.o", Cmd: []string{"cc", "-c", "known.c"}}
	hist.Record(known, time.Second)
	hist.RecordPeak(known, 700<<20)
	m := newGate(t, hist, 0)
	cc := &buildgraph.Task{ID: "a.o", Cmd: []string{"cc", "-c", "a.c"}}
	ld := &buildgraph.Task{ID: "prog", Cmd: []string{"cc", "a.o", "-o", "prog"}}
	sh := &buildgraph.Task{ID: "gen", Shell: "python3 gen.py"}
	declared := &buildgraph.Task{ID: "d.o", Cmd: []string{"cc", "-c", "d.c"}, MemMB: 50}
	knownDeclared := &buildgraph.Task{ID: "known.o", Cmd: []string{"cc", "-c", "known.c"}, MemMB: 10}

	check := func(what string, task *buildgraph.Task, k compile.Kind, want int64) {
		t.Helper()
		got, prior := m.need(task, k)
		if got != want {
			t.Errorf("%s: need %d MiB, want %d MiB", what, got>>20, want>>20)
		}
		if wantPrior := task.MemMB == 0 && task != known; prior != wantPrior {
			t.Errorf("%s: prior %v, want %v", what, prior, wantPrior)
		}
	}
	check("declared", declared, compile.Compile, 50<<20)
	check("declared over the history", knownDeclared, compile.Compile, 10<<20)
	check("history", known, compile.Compile, 700<<20)
	check("first compile", cc, compile.Compile, 256<<20)
	check("first link", ld, compile.Link, 1<<30)
	check("first other", sh, compile.Other, 64<<20)

	// A running compile holding more than the guess raises it.
	big := &attempt{id: 1, kind: compile.Compile}
	big.peak.Store(400 << 20)
	m.running[1] = big
	check("first compile beside a bigger one", cc, compile.Compile, 400<<20)
	check("a link beside a compile", ld, compile.Link, 1<<30)
	// Once compiles have finished, their peak is the prior, below the
	// guess too; a running one that holds more raises it.
	delete(m.running, 1)
	for range 3 {
		m.priors[compile.Compile].Add(90 << 20)
	}
	check("compile after others finished", cc, compile.Compile, 90<<20)
	m.running[1] = big
	check("compile after others, one holding more", cc, compile.Compile, 400<<20)
}

// Which deaths are OOM kills to retry, and the need of a retry.
func TestMemoryOOMKill(t *testing.T) {
	for _, tt := range []struct {
		res  proc.Result
		want bool
	}{
		{proc.Result{Outcome: proc.Failed, Signal: syscall.SIGKILL}, true},
		{proc.Result{Outcome: proc.Failed, Signal: syscall.SIGKILL, TimedOut: true}, false}, // --timeout
		{proc.Result{Outcome: proc.Canceled, Signal: syscall.SIGKILL}, false},               // Ctrl-C twice
		{proc.Result{Outcome: proc.Failed, Signal: syscall.SIGTERM}, false},
		{proc.Result{Outcome: proc.Failed, ExitCode: 137}, false},
		{proc.Result{Outcome: proc.Succeeded}, false},
	} {
		if got := oomKill(&tt.res); got != tt.want {
			t.Errorf("oomKill(%+v) = %v, want %v", tt.res, got, tt.want)
		}
	}
	if got := retryNeed(256<<20, 300<<20); got != 450<<20 {
		t.Errorf("retryNeed(256M, 300M) = %dM, want 450M", got>>20)
	}
	if got := retryNeed(1<<30, 300<<20); got != 3<<29 {
		t.Errorf("retryNeed(1G, 300M) = %dM, want 1536M", got>>20)
	}
}

func TestHeldLittle(t *testing.T) {
	for _, c := range []struct {
		peak, limit, avail int64
		want               bool
	}{
		{peak: 14 << 20, limit: 341 << 20, want: true},   // killed for another program's memory
		{peak: 330 << 20, limit: 341 << 20, want: false}, // it ran out
		{peak: 171 << 20, limit: 341 << 20, want: false},
		{peak: 100 << 20, avail: 1 << 30, want: true}, // no limit: what is available once it is gone
		{peak: 600 << 20, avail: 1 << 30, want: false},
	} {
		if got := heldLittle(c.peak, memory.Sample{Limit: c.limit, Available: c.avail}); got != c.want {
			t.Errorf("heldLittle(%dM, limit %dM, available %dM) = %v, want %v", c.peak>>20, c.limit>>20, c.avail>>20, got, c.want)
		}
	}
}

// Under a budget, tasks whose needs do not fit together run one after
// the other, in the order they were handed out; the scheduler's declared
// limit is not involved (Options.MemMB 0).
func TestMemoryBudgetSerializes(t *testing.T) {
	dir := t.TempDir()
	var tasks []*buildgraph.Task
	for i := range 4 {
		tasks = append(tasks, &buildgraph.Task{ID: fmt.Sprintf("big%d", i), Shell: "sleep 0.2", MemMB: 600, Cwd: dir})
	}
	for i := range 3 {
		tasks = append(tasks, &buildgraph.Task{ID: fmt.Sprintf("small%d", i), Shell: "sleep 0.5", MemMB: 300, Cwd: dir})
	}
	g := &buildgraph.Graph{Tasks: tasks}
	src, err := memory.Open("/", 0)
	if err != nil {
		t.Fatal(err)
	}
	var handed []string
	trace := buildgraph.NewTraceWriter(time.Now(), "memory test")
	rep, err := Run(context.Background(), newRuntime(t), g, opts(Options{
		Slots:   4,
		Trace:   trace,
		Started: func(t *buildgraph.Task) { handed = append(handed, t.ID) },
		Memory:  &MemoryOptions{Source: src, Thresholds: memory.Thresholds{Budget: 1 << 30}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	if !rep.OK() {
		t.Fatalf("not all succeeded: %v", rep.Counts)
	}
	if rep.Memory == nil || rep.Memory.Budget != 1<<30 {
		t.Fatalf("Report.Memory = %+v", rep.Memory)
	}
	// No two bigs at once.
	for i, a := range rep.Tasks {
		for _, b := range rep.Tasks[i+1:] {
			pa, pb := a.Proc, b.Proc
			overlap := pa.Start.Before(pb.End) && pb.Start.Before(pa.End)
			if overlap && strings.HasPrefix(a.Task.ID, "big") && strings.HasPrefix(b.Task.ID, "big") {
				t.Errorf("%s [%v, %v] ran beside %s [%v, %v] under a budget of 1 GiB", a.Task.ID, pa.Start, pa.End, b.Task.ID, pb.Start, pb.End)
			}
		}
	}
	// The bigs, one at a time, in the order handed out (tasks admitted
	// together may fork in any order).
	byStart := slices.Clone(rep.Tasks)
	slices.SortFunc(byStart, func(a, b TaskResult) int { return a.Proc.Start.Compare(b.Proc.Start) })
	isBig := func(id string) bool { return strings.HasPrefix(id, "big") }
	var started []string
	for _, tr := range byStart {
		if isBig(tr.Task.ID) {
			started = append(started, tr.Task.ID)
		}
	}
	if handed = slices.DeleteFunc(handed, func(id string) bool { return !isBig(id) }); !slices.Equal(started, handed) {
		t.Errorf("bigs started %v, handed out %v", started, handed)
	}
	var tb bytes.Buffer
	if _, err := trace.WriteTo(&tb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tb.String(), `"name":"memory","ph":"C"`) || !strings.Contains(tb.String(), `"in_use_mib"`) {
		t.Errorf("the trace has no memory counter:\n%s", tb.String())
	}
	requireNoChildren(t)
}

// maxConcurrent returns the most processes of rep that ran at once.
func maxConcurrent(rep *Report) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var es []edge
	for _, tr := range rep.Tasks {
		if tr.Proc != nil && tr.Proc.Pid > 0 {
			es = append(es, edge{tr.Proc.Start, 1}, edge{tr.Proc.End, -1})
		}
	}
	slices.SortFunc(es, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // an end before a start at the same moment
	})
	n, most := 0, 0
	for _, e := range es {
		n += e.delta
		most = max(most, n)
	}
	return most
}

// Many short tasks through the memory line, at more slots than the budget
// admits, and a run canceled while tasks wait for memory: every task has
// one outcome, the budget holds, nothing is left.
func TestMemoryGateStress(t *testing.T) {
	src, err := memory.Open("/", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, cancelAfter := range []int{0, 10} {
		var tasks []*buildgraph.Task
		for i := range 150 {
			tasks = append(tasks, &buildgraph.Task{ID: fmt.Sprint(i), Cmd: []string{"true"}, MemMB: 100})
		}
		g := &buildgraph.Graph{Tasks: tasks}
		ctx, cancel := context.WithCancel(context.Background())
		ended := 0
		rep, err := Run(ctx, newRuntime(t), g, opts(Options{
			Slots:     8,
			KeepGoing: true,
			Memory:    &MemoryOptions{Source: src, Thresholds: memory.Thresholds{Budget: 350 << 20}},
			Progress: func(s Status) {
				if s.Last != nil {
					if ended++; ended == cancelAfter {
						cancel()
					}
				}
			},
		}))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, n := range rep.Counts {
			total += n
		}
		if total != len(tasks) {
			t.Errorf("cancel after %d: %d outcomes for %d tasks: %v", cancelAfter, total, len(tasks), rep.Counts)
		}
		if cancelAfter == 0 && !rep.OK() {
			t.Errorf("not all succeeded: %v", rep.Counts)
		}
		if cancelAfter > 0 && rep.Counts[buildgraph.Succeeded] == len(tasks) {
			t.Errorf("cancel after %d: every task succeeded", cancelAfter)
		}
		if n := maxConcurrent(rep); n > 3 {
			t.Errorf("cancel after %d: %d tasks of 100 MiB ran at once under a budget of 350 MiB", cancelAfter, n)
		}
		if rep.Memory.Waiting != 0 || rep.Memory.Jobs != 0 {
			t.Errorf("cancel after %d: %d waiting, %d watched at the end", cancelAfter, rep.Memory.Waiting, rep.Memory.Jobs)
		}
		rep.Close()
		requireNoChildren(t)
	}
}
