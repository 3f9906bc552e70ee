package buildrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/proc"
	"github.com/numasteal/numasteal/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newRuntime(t *testing.T) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// opts returns Options that make the runner a subreaper, so
// requireNoChildren can demand that nothing is left.
func opts(o Options) Options {
	o.Process.Subreaper = true
	o.Process.Grace = 200 * time.Millisecond
	return o
}

// requireNoChildren fails when a process whose parent is this test process
// (a zombie included) is left.
func requireNoChildren(t *testing.T) {
	t.Helper()
	self := strconv.Itoa(os.Getpid())
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(data)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == self {
			t.Errorf("process left behind: %s", s)
		}
	}
}

func parse(t *testing.T, js string) *buildgraph.Graph {
	t.Helper()
	g, err := buildgraph.Parse("test.json", []byte(js), buildgraph.FormatGraph)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func outcomes(r *Report) map[string]buildgraph.Outcome {
	m := map[string]buildgraph.Outcome{}
	for _, t := range r.Tasks {
		m[t.Task.ID] = t.Outcome
	}
	return m
}

// Dependencies: every task's process starts after its dependencies'
// processes ended, and the files they write chain up.
func TestRunDependencies(t *testing.T) {
	rt := newRuntime(t)
	dir := t.TempDir()
	g := parse(t, `{"tasks": [
		{"id": "a", "shell": "echo a > a.txt", "cwd": "`+dir+`"},
		{"id": "b", "shell": "cat a.txt > b.txt; echo b >> b.txt", "deps": ["a"], "cwd": "`+dir+`"},
		{"id": "c", "shell": "cat a.txt > c.txt; echo $X >> c.txt", "deps": ["a"], "cwd": "`+dir+`", "env": {"X": "c"}},
		{"id": "d", "cmd": ["sh", "-c", "cat b.txt c.txt > d.txt"], "deps": ["b", "c"], "cwd": "`+dir+`"}
	]}`)
	rep, err := Run(context.Background(), rt, g, opts(Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	if !rep.OK() {
		t.Fatalf("outcomes %v", outcomes(rep))
	}
	byID := map[string]TaskResult{}
	for _, tr := range rep.Tasks {
		byID[tr.Task.ID] = tr
	}
	for _, tr := range rep.Tasks {
		for _, d := range tr.Task.Deps {
			if tr.Proc.Start.Before(byID[d].Proc.End) {
				t.Errorf("%s started before its dependency %s ended", tr.Task.ID, d)
			}
		}
	}
	got, _ := os.ReadFile(filepath.Join(dir, "d.txt"))
	if string(got) != "a\nb\na\nc\n" {
		t.Errorf("d.txt = %q", got)
	}
	if rep.Elapsed <= 0 || rep.User+rep.Sys <= 0 {
		t.Errorf("elapsed %v user %v sys %v", rep.Elapsed, rep.User, rep.Sys)
	}
	requireNoChildren(t)
}

// A failure skips its dependents; without keep-going the rest is not run,
// with it the rest runs. A program that does not exist is its task's
// failure.
func TestRunKeepGoing(t *testing.T) {
	rt := newRuntime(t)
	g := parse(t, `{"tasks": [
		{"id": "fail", "cmd": ["numasteal-no-such-program"]},
		{"id": "dep", "shell": "true", "deps": ["fail"]},
		{"id": "dep2", "shell": "true", "deps": ["dep"]},
		{"id": "x", "shell": "true"},
		{"id": "y", "shell": "exit 4"}
	]}`)
	tests := []struct {
		keepGoing bool
		want      map[string]buildgraph.Outcome
	}{
		{false, map[string]buildgraph.Outcome{"fail": buildgraph.Failed, "dep": buildgraph.Skipped, "dep2": buildgraph.Skipped, "x": buildgraph.NotRun, "y": buildgraph.NotRun}},
		{true, map[string]buildgraph.Outcome{"fail": buildgraph.Failed, "dep": buildgraph.Skipped, "dep2": buildgraph.Skipped, "x": buildgraph.Succeeded, "y": buildgraph.Failed}},
	}
	for _, tc := range tests {
		t.Run("keepGoing="+strconv.FormatBool(tc.keepGoing), func(t *testing.T) {
			rep, err := Run(context.Background(), rt, g, opts(Options{Slots: 1, KeepGoing: tc.keepGoing}))
			if err != nil {
				t.Fatal(err)
			}
			defer rep.Close()
			got := outcomes(rep)
			for id, o := range tc.want {
				if got[id] != o {
					t.Errorf("%s: %v, want %v", id, got[id], o)
				}
			}
			for _, tr := range rep.Tasks {
				if (tr.Proc != nil) != tr.Outcome.Ran() {
					t.Errorf("%s: outcome %v with process %v", tr.Task.ID, tr.Outcome, tr.Proc != nil)
				}
				if tr.Outcome == buildgraph.Skipped && tr.Cause.ID != "fail" {
					t.Errorf("%s skipped because of %v", tr.Task.ID, tr.Cause)
				}
			}
			if f := rep.Failed(); len(f) == 0 || !errors.Is(f[0].Proc.Err, exec.ErrNotFound) {
				t.Errorf("failed tasks %v", f)
			}
			if rep.OK() {
				t.Error("OK with failures")
			}
		})
	}
	requireNoChildren(t)
}

// maxOverlap returns the most intervals of rs that hold at once, each
// weighted by w.
func maxOverlap(rs []TaskResult, w func(TaskResult) int) int {
	best := 0
	for _, a := range rs {
		n := 0
		for _, b := range rs {
			if !b.Proc.Start.After(a.Proc.Start) && b.Proc.End.After(a.Proc.Start) {
				n += w(b)
			}
		}
		best = max(best, n)
	}
	return best
}

// Pools, memory and slots are never exceeded; with unlimited admission the
// processes alive at once still never exceed the workers.
func TestRunLimitsNeverExceeded(t *testing.T) {
	rt := newRuntime(t)
	var b strings.Builder
	b.WriteString(`{"pools": {"link": 1}, "tasks": [`)
	for i := range 16 {
		if i > 0 {
			b.WriteString(",")
		}
		pool := ""
		if i%4 == 0 {
			pool = `, "pool": "link"`
		}
		b.WriteString(`{"id": "t` + strconv.Itoa(i) + `", "shell": "sleep 0.03", "mem_mb": 300` + pool + `}`)
	}
	b.WriteString("]}")
	g := parse(t, b.String())
	for _, slots := range []int{0, 1, 3} {
		t.Run("slots="+strconv.Itoa(slots), func(t *testing.T) {
			rep, err := Run(context.Background(), rt, g, opts(Options{Slots: slots, MemMB: 900}))
			if err != nil {
				t.Fatal(err)
			}
			defer rep.Close()
			if !rep.OK() {
				t.Fatalf("outcomes %v", outcomes(rep))
			}
			limit := slots
			if slots == 0 {
				limit = rt.Workers()
			}
			if n := maxOverlap(rep.Tasks, func(TaskResult) int { return 1 }); n > limit {
				t.Errorf("%d processes at once, limit %d", n, limit)
			}
			if mem := maxOverlap(rep.Tasks, func(tr TaskResult) int { return tr.Task.MemMB }); mem > 900 {
				t.Errorf("%d MB at once, limit 900", mem)
			}
			var link []TaskResult
			for _, tr := range rep.Tasks {
				if tr.Task.Pool == "link" {
					link = append(link, tr)
				}
			}
			if n := maxOverlap(link, func(TaskResult) int { return 1 }); n > 1 {
				t.Errorf("%d link-pool tasks at once, depth 1", n)
			}
		})
	}
	requireNoChildren(t)
}

// A run records its durations; the next run is weighted by them and its
// progress reports are timed. The trace has one complete event per task.
func TestRunHistoryTraceProgress(t *testing.T) {
	rt := newRuntime(t)
	g := parse(t, `{"tasks": [
		{"id": "a", "shell": "sleep 0.02"},
		{"id": "b", "shell": "sleep 0.02", "deps": ["a"]},
		{"id": "c", "cmd": ["true"]}
	]}`)
	hist := buildgraph.NewHistory()
	var statuses []Status
	o := opts(Options{History: hist, Progress: func(s Status) { statuses = append(statuses, s) }})
	rep, err := Run(context.Background(), rt, g, o)
	if err != nil {
		t.Fatal(err)
	}
	rep.Close()
	if hist.Len() != 3 {
		t.Fatalf("history has %d entries, want 3", hist.Len())
	}
	if len(statuses) != 3 || statuses[2].Finished() != 3 || statuses[2].ETA != 0 || statuses[0].Last == nil {
		t.Fatalf("progress reports %+v", statuses)
	}

	trace := buildgraph.NewTraceWriter(time.Now(), "test")
	statuses = nil
	o.Trace = trace
	rep, err = Run(context.Background(), rt, g, o)
	if err != nil {
		t.Fatal(err)
	}
	rep.Close()
	if !statuses[0].Timed || statuses[0].ETA < 0 {
		t.Errorf("second run's progress not timed by the history: %+v", statuses[0])
	}
	var buf bytes.Buffer
	if _, err := trace.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Tid  int            `json:"tid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("trace is not JSON: %v", err)
	}
	spans := map[string]string{}
	for _, ev := range doc.TraceEvents {
		if ev.Ph == "X" {
			spans[ev.Name], _ = ev.Args["cmd"].(string)
		}
	}
	if len(spans) != 3 || spans["a"] != "sleep 0.02" || spans["c"] != "true" {
		t.Errorf("trace spans %v", spans)
	}
}

// Canceling the context mid-run kills the running processes; every task
// gets exactly one outcome and nothing is left.
func TestRunCancelMidRun(t *testing.T) {
	rt := newRuntime(t)
	g := parse(t, `{"tasks": [
		{"id": "a", "shell": "sleep 30 & sleep 30"},
		{"id": "b", "shell": "sleep 30"},
		{"id": "c", "shell": "true", "deps": ["a"]},
		{"id": "d", "shell": "sleep 30"}
	]}`)
	ctx, cancel := context.WithCancel(context.Background())
	o := opts(Options{Slots: 2, Progress: func(Status) {}, ProgressEvery: 10 * time.Millisecond})
	time.AfterFunc(300*time.Millisecond, cancel)
	rep, err := Run(ctx, rt, g, o)
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	total := 0
	for _, c := range rep.Counts {
		total += c
	}
	if total != 4 || rep.Counts[buildgraph.Canceled] != 4 {
		t.Fatalf("outcomes %v", outcomes(rep))
	}
	requireNoChildren(t)
}

// A graph that can never fit the limits is refused before anything runs.
func TestRunRefusesTooBig(t *testing.T) {
	rt := newRuntime(t)
	g := parse(t, `{"tasks": [{"id": "big", "shell": "touch ran", "cpus": 4}]}`)
	_, err := Run(context.Background(), rt, g, opts(Options{Slots: 2}))
	var be *buildgraph.Error
	if !errors.As(err, &be) || !errors.Is(err, buildgraph.ErrTooBig) {
		t.Fatalf("err %v, want ErrTooBig", err)
	}
}

// Output release: a task's spill files are gone once it has been
// reported, a failed task's stay for the Report until Close, and no file
// is left after it, at -j 2 and at -j 0 (where tasks wait in Run's queue).
func TestRunReleasesOutput(t *testing.T) {
	rt := newRuntime(t)
	for _, slots := range []int{2, 0} {
		dir := t.TempDir()
		g := &buildgraph.Graph{}
		for i := range 12 {
			g.Tasks = append(g.Tasks, &buildgraph.Task{ID: "t" + strconv.Itoa(i), Shell: "seq 1 200; seq 1 100 >&2"})
		}
		g.Tasks = append(g.Tasks, &buildgraph.Task{ID: "bad", Shell: "seq 1 300 >&2; exit 3"})
		var reported []string // spill files of tasks already reported
		var failures []error
		progress := func(s Status) {
			if s.Last == nil {
				return
			}
			for _, p := range reported {
				if _, err := os.Stat(p); err == nil {
					failures = append(failures, errors.New("spill file "+p+" left after its task was reported"))
				}
			}
			if s.Last.Outcome == buildgraph.Failed {
				return
			}
			for _, out := range []*proc.Output{s.Last.Proc.Stdout, s.Last.Proc.Stderr} {
				if p := out.SpillFile(); p != "" {
					reported = append(reported, p)
				} else {
					failures = append(failures, errors.New(s.Last.Task.ID+": output did not spill"))
				}
			}
		}
		o := opts(Options{Slots: slots, KeepGoing: true, Progress: progress})
		o.Process.OutputLimit, o.Process.SpillDir = 64, dir
		rep, err := Run(context.Background(), rt, g, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range failures {
			t.Errorf("slots %d: %v", slots, err)
		}
		left, _ := os.ReadDir(dir)
		if len(left) != 1 { // the failure's stderr
			t.Errorf("slots %d: %d spill files left before Close, want 1", slots, len(left))
		}
		bad := rep.Failed()
		if len(bad) != 1 {
			t.Fatalf("slots %d: failures %v", slots, rep.Counts)
		}
		if tail, err := bad[0].Proc.Stderr.Tail(4); err != nil || string(tail) != "300\n" {
			t.Errorf("slots %d: failure's stderr tail %q, %v", slots, tail, err)
		}
		if err := rep.Close(); err != nil {
			t.Error(err)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Errorf("slots %d: %d spill files left after Close", slots, len(left))
		}
	}
	requireNoChildren(t)
}

// Started sees each task once, before Progress reports its end; Runner
// sees the runner before any task starts.
func TestStartedAndRunnerCallbacks(t *testing.T) {
	rt := newRuntime(t)
	g := parse(t, `{"tasks": [{"id": "a", "cmd": ["true"]}, {"id": "b", "cmd": ["true"], "deps": ["a"]}, {"id": "c", "cmd": ["true"]}]}`)
	var events []string
	var runner *proc.Runner
	rep, err := Run(context.Background(), rt, g, opts(Options{
		Slots:   2,
		Runner:  func(r *proc.Runner) { runner = r; events = append(events, "runner") },
		Started: func(t *buildgraph.Task) { events = append(events, "start "+t.ID) },
		Progress: func(s Status) {
			if s.Last != nil {
				events = append(events, "end "+s.Last.Task.ID)
			}
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	if runner == nil || len(events) != 7 || events[0] != "runner" {
		t.Fatalf("events %q", events)
	}
	seen := map[string]int{}
	for i, e := range events[1:] {
		seen[e] = i
	}
	for _, id := range []string{"a", "b", "c"} {
		s, ok1 := seen["start "+id]
		e, ok2 := seen["end "+id]
		if !ok1 || !ok2 || s > e {
			t.Errorf("task %s: start at %d, end at %d (%q)", id, s, e, events)
		}
	}
	if seen["start b"] < seen["end a"] {
		t.Errorf("b started before a ended: %q", events)
	}
}

// Layers of tasks, each task depending on every task of the layer before:
// the end of a layer's last task makes a whole layer ready at once, after
// the goroutines of the layer's other tasks found nothing to run next and
// ended. Every task runs once, after its dependencies, within the slots.
func TestRunLayersHandOut(t *testing.T) {
	rt := newRuntime(t)
	const layers, width = 5, 6
	var b strings.Builder
	b.WriteString(`{"tasks": [`)
	for l := range layers {
		for i := range width {
			if l+i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"id": "l%di%d", "cmd": ["true"]`, l, i)
			if l > 0 {
				b.WriteString(`, "deps": [`)
				for j := range width {
					if j > 0 {
						b.WriteString(",")
					}
					fmt.Fprintf(&b, `"l%di%d"`, l-1, j)
				}
				b.WriteString("]")
			}
			b.WriteString("}")
		}
	}
	b.WriteString("]}")
	g := parse(t, b.String())
	for _, slots := range []int{0, 1, 2, 3} {
		t.Run("slots="+strconv.Itoa(slots), func(t *testing.T) {
			var started []string
			rep, err := Run(context.Background(), rt, g, opts(Options{Slots: slots, KeepOutput: true,
				Started: func(t *buildgraph.Task) { started = append(started, t.ID) }}))
			if err != nil {
				t.Fatal(err)
			}
			defer rep.Close()
			if !rep.OK() {
				t.Fatalf("outcomes %v", outcomes(rep))
			}
			if len(started) != layers*width {
				t.Errorf("%d tasks started, want %d", len(started), layers*width)
			}
			byID := map[string]TaskResult{}
			for _, tr := range rep.Tasks {
				byID[tr.Task.ID] = tr
			}
			for _, tr := range rep.Tasks {
				for _, d := range tr.Task.Deps {
					if tr.Proc.Start.Before(byID[d].Proc.End) {
						t.Errorf("%s started before its dependency %s ended", tr.Task.ID, d)
					}
				}
			}
			limit := slots
			if slots == 0 {
				limit = rt.Workers()
			}
			if n := maxOverlap(rep.Tasks, func(TaskResult) int { return 1 }); n > limit {
				t.Errorf("%d processes at once, limit %d", n, limit)
			}
		})
	}
	requireNoChildren(t)
}
