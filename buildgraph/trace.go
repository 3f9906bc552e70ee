package buildgraph

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"
)

// TraceWriter records a run as Chrome Trace Event Format JSON (the "JSON
// Object Format" of the Trace Event Format document), which Perfetto
// (ui.perfetto.dev) and chrome://tracing open. Each task is a complete
// event ("ph":"X") on the track of the CPU it ran on, with its command in
// the args; tracks are named by metadata events ("ph":"M", thread_name).
// Counters ("ph":"C") draw a value over time, such as the running tasks;
// instant events ("ph":"i", global scope) mark a moment, such as a task
// frozen for memory.
//
// Track numbers are trace thread ids: CPU n is track n, named "CPU n"; a
// host of a compile farm gets a track after all CPUs (HostTrack).
// TraceWriter keeps the events in memory until WriteTo; it is safe for
// concurrent use.
type TraceWriter struct {
	origin  time.Time
	process string

	mu     sync.Mutex
	events []traceEvent
	tracks map[int]string // track → name, for every track used or named
	hosts  map[string]int // host name → track
}

// hostTrackBase is the first track given to a host: above any CPU number
// Linux supports (CONFIG_NR_CPUS is at most 8192), so hosts sort after CPUs.
const hostTrackBase = 1 << 16

// tracePid is the trace process id of every event: one process, numasteal.
const tracePid = 1

type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	S    string         `json:"s,omitempty"`   // scope, for "i"
	Ts   float64        `json:"ts"`            // µs since origin
	Dur  *float64       `json:"dur,omitempty"` // µs, for "X"
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// NewTraceWriter returns a TraceWriter whose timestamps count from origin
// (the start of the run); process names the trace's one process
// ("numasteal run build.json").
func NewTraceWriter(origin time.Time, process string) *TraceWriter {
	return &TraceWriter{origin: origin, process: process, tracks: map[int]string{}, hosts: map[string]int{}}
}

// micros converts t into trace microseconds, keeping nanoseconds as the
// fraction.
func (w *TraceWriter) micros(t time.Time) float64 {
	return float64(t.Sub(w.origin).Nanoseconds()) / 1e3
}

// HostTrack returns the track for a remote host, naming it on first use.
func (w *TraceWriter) HostTrack(host string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if tr, ok := w.hosts[host]; ok {
		return tr
	}
	tr := hostTrackBase + len(w.hosts)
	w.hosts[host] = tr
	w.tracks[tr] = host
	return tr
}

// Span records a complete event named name on track (a CPU number or a
// HostTrack) from start to end. args (may be nil) must marshal to JSON; it
// is kept, not copied.
func (w *TraceWriter) Span(track int, name string, start, end time.Time, args map[string]any) {
	dur := max(float64(end.Sub(start).Nanoseconds())/1e3, 0)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.useTrack(track)
	w.events = append(w.events, traceEvent{
		Name: name, Cat: "task", Ph: "X", Ts: w.micros(start), Dur: &dur,
		Pid: tracePid, Tid: track, Args: args,
	})
}

// TaskSpan records a task's run on track: named by its ID, with args "cmd"
// (Task.CommandLine) and "outcome", plus extra (may be nil; exit status,
// rusage, ...). The times come from r (see Result).
func (w *TraceWriter) TaskSpan(track int, r Result, extra map[string]any) {
	args := make(map[string]any, len(extra)+2)
	for k, v := range extra {
		args[k] = v
	}
	args["cmd"] = r.Task.CommandLine()
	args["outcome"] = r.Outcome.String()
	w.Span(track, r.Task.ID, r.Start, r.End, args)
}

// InstantOn records an instant event ("ph":"i", a marker) named name on
// track at time at: a job frozen or thawed on its CPU's track.
func (w *TraceWriter) InstantOn(track int, name string, at time.Time, args map[string]any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.useTrack(track)
	w.events = append(w.events, traceEvent{Name: name, Cat: "memory", Ph: "i", Ts: w.micros(at), Pid: tracePid, Tid: track, Args: args})
}

// Counter records the values of a counter (one line per key) at time at.
func (w *TraceWriter) Counter(name string, at time.Time, values map[string]float64) {
	args := make(map[string]any, len(values))
	for k, v := range values {
		args[k] = v
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, traceEvent{Name: name, Ph: "C", Ts: w.micros(at), Pid: tracePid, Args: args})
}

// Instant records an instant event named name at time at, across the
// whole trace, with args (may be nil; kept, not copied).
func (w *TraceWriter) Instant(name string, at time.Time, args map[string]any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, traceEvent{Name: name, Ph: "i", S: "g", Ts: w.micros(at), Pid: tracePid, Args: args})
}

// useTrack names a CPU track on first use. w.mu must be held.
func (w *TraceWriter) useTrack(track int) {
	if _, ok := w.tracks[track]; !ok {
		w.tracks[track] = fmt.Sprintf("CPU %d", track)
	}
}

// WriteTo writes the trace: {"traceEvents":[...],"displayTimeUnit":"ms"},
// one event per line, metadata first, then the events by time.
func (w *TraceWriter) WriteTo(out io.Writer) (int64, error) {
	w.mu.Lock()
	events := slices.Clone(w.events)
	meta := []traceEvent{{Name: "process_name", Ph: "M", Pid: tracePid, Args: map[string]any{"name": w.process}}}
	for _, tr := range slices.Sorted(maps.Keys(w.tracks)) {
		meta = append(meta,
			traceEvent{Name: "thread_name", Ph: "M", Pid: tracePid, Tid: tr, Args: map[string]any{"name": w.tracks[tr]}},
			traceEvent{Name: "thread_sort_index", Ph: "M", Pid: tracePid, Tid: tr, Args: map[string]any{"sort_index": tr}})
	}
	w.mu.Unlock()
	slices.SortStableFunc(events, func(a, b traceEvent) int {
		return cmp.Or(cmp.Compare(a.Ts, b.Ts), cmp.Compare(a.Tid, b.Tid))
	})

	cw := &countWriter{w: out}
	bw := bufio.NewWriter(cw)
	bw.WriteString(`{"traceEvents":[`)
	for i, ev := range append(meta, events...) {
		b, err := json.Marshal(ev)
		if err != nil {
			return cw.n, fmt.Errorf("buildgraph: trace event %q: %w", ev.Name, err)
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n")
		bw.Write(b)
	}
	bw.WriteString("\n],\"displayTimeUnit\":\"ms\"}\n")
	err := bw.Flush()
	return cw.n, err
}

// countWriter counts the bytes written through it, for io.WriterTo.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
