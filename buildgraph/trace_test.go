package buildgraph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"
)

type traceFile struct {
	TraceEvents []struct {
		Name string         `json:"name"`
		Cat  string         `json:"cat"`
		Ph   string         `json:"ph"`
		S    string         `json:"s"`
		Ts   float64        `json:"ts"`
		Dur  *float64       `json:"dur"`
		Pid  int            `json:"pid"`
		Tid  int            `json:"tid"`
		Args map[string]any `json:"args"`
	} `json:"traceEvents"`
	DisplayTimeUnit string `json:"displayTimeUnit"`
}

func TestTraceWriter(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	w := NewTraceWriter(t0, "numasteal run build.json")
	task := &Task{ID: "a.o", Cmd: []string{"cc", "-c", "a b.c"}}
	w.TaskSpan(Result{Task: task, Outcome: Failed, Start: t0.Add(1500 * time.Microsecond), End: t0.Add(2*time.Millisecond + 250*time.Nanosecond)},
		map[string]any{"exit": 1})
	w.Span(0, "link", t0, t0.Add(time.Second), nil)
	farm := w.HostTrack("farm-1")
	if again := w.HostTrack("farm-1"); again != farm {
		t.Errorf("HostTrack not stable: %d, %d", farm, again)
	}
	w.Span(farm, "remote.o", t0.Add(time.Millisecond), t0.Add(3*time.Millisecond), map[string]any{"cmd": "cc -c r.c"})
	w.Counter("running", t0.Add(time.Millisecond), map[string]float64{"tasks": 2})
	w.Instant("freeze", t0.Add(2*time.Millisecond), map[string]any{"job": 4})

	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("WriteTo = %d, %v (wrote %d)", n, err, buf.Len())
	}
	var f traceFile
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatalf("trace is not JSON: %v\n%s", err, buf.Bytes())
	}
	if f.DisplayTimeUnit != "ms" {
		t.Errorf("displayTimeUnit = %q", f.DisplayTimeUnit)
	}
	names := map[int]string{}
	var spans []string
	for _, ev := range f.TraceEvents {
		if ev.Pid != 1 {
			t.Errorf("event %s: pid %d", ev.Name, ev.Pid)
		}
		switch ev.Ph {
		case "M":
			switch ev.Name {
			case "process_name":
				if ev.Args["name"] != "numasteal run build.json" {
					t.Errorf("process_name = %v", ev.Args)
				}
			case "thread_name":
				names[ev.Tid] = ev.Args["name"].(string)
			}
		case "X":
			spans = append(spans, ev.Name)
			if ev.Name == "a.o" {
				if ev.Ts != 1500 || ev.Dur == nil || *ev.Dur != 500.25 || ev.Tid != slotTrackBase || ev.Cat != "task" {
					t.Errorf("a.o event = %+v (dur %v)", ev, *ev.Dur)
				}
				want := map[string]any{"cmd": "cc -c 'a b.c'", "outcome": "failed", "exit": float64(1), "id": "a.o"}
				for k, v := range want {
					if ev.Args[k] != v {
						t.Errorf("a.o args[%s] = %v, want %v", k, ev.Args[k], v)
					}
				}
			}
		case "C":
			if ev.Name != "running" || ev.Args["tasks"] != float64(2) || ev.Ts != 1000 {
				t.Errorf("counter = %+v", ev)
			}
		case "i":
			if ev.Name != "freeze" || ev.S != "g" || ev.Ts != 2000 || ev.Args["job"] != float64(4) {
				t.Errorf("instant = %+v", ev)
			}
		default:
			t.Errorf("unexpected phase %q", ev.Ph)
		}
	}
	wantNames := map[int]string{0: "CPU 0", slotTrackBase: "slot 1", farm: "farm-1"}
	if len(names) != len(wantNames) {
		t.Errorf("track names = %v, want %v", names, wantNames)
	}
	for tid, n := range wantNames {
		if names[tid] != n {
			t.Errorf("track %d named %q, want %q", tid, names[tid], n)
		}
	}
	// Events in time order after the metadata.
	if want := []string{"link", "remote.o", "a.o"}; len(spans) != 3 || spans[0] != want[0] || spans[1] != want[1] || spans[2] != want[2] {
		t.Errorf("spans in order %v, want %v", spans, want)
	}
}

func TestTraceWriterEmpty(t *testing.T) {
	var buf bytes.Buffer
	if _, err := NewTraceWriter(time.Now(), "x").WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	var f traceFile
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil || len(f.TraceEvents) != 1 {
		t.Fatalf("empty trace = %s (%v)", buf.Bytes(), err)
	}
}

func TestTraceWriterBadArgs(t *testing.T) {
	w := NewTraceWriter(time.Now(), "x")
	w.Counter("load", time.Now(), map[string]float64{"nan": math.NaN()})
	if _, err := w.WriteTo(&bytes.Buffer{}); err == nil {
		t.Error("WriteTo with a NaN counter succeeded")
	}
}

func TestTraceWriterConcurrent(t *testing.T) {
	t0 := time.Now()
	w := NewTraceWriter(t0, "x")
	var wg sync.WaitGroup
	for cpu := range 4 {
		wg.Go(func() {
			for i := range 100 {
				w.Span(cpu, "t", t0.Add(time.Duration(i)*time.Millisecond), t0.Add(time.Duration(i+1)*time.Millisecond), nil)
				if i%25 == 0 {
					w.HostTrack("h")
					w.WriteTo(&bytes.Buffer{})
				}
			}
		})
	}
	wg.Wait()
	var buf bytes.Buffer
	w.WriteTo(&buf)
	var f traceFile
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	// 400 spans, process name, 5 tracks × (name, sort index).
	if got := len(f.TraceEvents); got != 400+1+10 {
		t.Errorf("%d events", got)
	}
}

// Slot spans: as many slots as spans at once, none overlapping on a slot,
// each on the lowest slot free when it starts; slots sort first.
func TestTraceWriterSlots(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	w := NewTraceWriter(t0, "x")
	// Recorded in the order they end, as a run does; at most 3 at once.
	spans := []struct {
		name       string
		start, end int
		slot       int
	}{
		{"a", 0, 10, 1}, {"b", 1, 4, 2}, {"c", 2, 12, 3}, {"d", 4, 8, 2},
		{"e", 10, 11, 1}, {"f", 8, 20, 2}, {"g", 12, 13, 1}, {"h", 12, 14, 3},
	}
	for _, i := range []int{1, 3, 0, 4, 2, 6, 7, 5} {
		sp := spans[i]
		w.SlotSpan(sp.name, ms(sp.start), ms(sp.end), nil)
	}
	w.Span(2, "on cpu 2", t0, ms(1), nil)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	var f traceFile
	if err := json.Unmarshal(buf.Bytes(), &f); err != nil {
		t.Fatal(err)
	}
	names, sortIdx, got := map[int]string{}, map[int]float64{}, map[string]int{}
	for _, ev := range f.TraceEvents {
		switch {
		case ev.Ph == "M" && ev.Name == "thread_name":
			names[ev.Tid] = ev.Args["name"].(string)
		case ev.Ph == "M" && ev.Name == "thread_sort_index":
			sortIdx[ev.Tid] = ev.Args["sort_index"].(float64)
		case ev.Ph == "X":
			got[ev.Name] = ev.Tid
		}
	}
	for _, sp := range spans {
		if tid := got[sp.name]; names[tid] != fmt.Sprintf("slot %d", sp.slot) {
			t.Errorf("span %s on track %d (%q), want slot %d", sp.name, tid, names[tid], sp.slot)
		}
	}
	if len(names) != 4 || names[2] != "CPU 2" {
		t.Errorf("tracks %v, want 3 slots and CPU 2", names)
	}
	if !(sortIdx[slotTrackBase] < sortIdx[slotTrackBase+2] && sortIdx[slotTrackBase+2] < sortIdx[2]) {
		t.Errorf("sort indices %v: slots in order, then CPUs", sortIdx)
	}
}

func TestTaskTraceName(t *testing.T) {
	for _, tc := range []struct {
		task Task
		want string
	}{
		{Task{ID: "line 3", Shell: "gcc -c a.c -o obj/a.o -O2", Pos: Pos{File: "c.txt", Line: 3}}, "obj/a.o"},
		{Task{ID: "line 4", Shell: "sleep 1", Pos: Pos{File: "c.txt", Line: 4}}, "sleep 1"},
		{Task{ID: "line 5", Shell: "cc -o \"$OUT\" x.c", Pos: Pos{File: "c.txt", Line: 5}}, "cc -o \"$OUT\" x.c"},
		{Task{ID: "link", Cmd: []string{"cc", "-o", "my app", "a.o"}}, "my app"},
		{Task{ID: "gen", Shell: "./gen > x.h"}, "gen"},
		{Task{ID: "a.o", Cmd: []string{"cc", "-c", "a.c"}}, "a.o"},
	} {
		if got := tc.task.TraceName(); got != tc.want {
			t.Errorf("%q: TraceName %q, want %q", tc.task.CommandLine(), got, tc.want)
		}
	}
}
