package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"github.com/numasteal/numasteal/buildgraph"
)

// Scale: how the build scheduler's cost per task grows with the number of
// tasks. No process runs: a loop takes tasks from a buildgraph.Scheduler
// with Acquire and reports them with Complete, keeping ScaleSlots of them
// "running" and completing the oldest first, and reads Progress after every
// completion as `numasteal run` does for its display. What is timed is that loop
// (the per-task path), apart from NewScheduler (the one-off setup). A
// small graph is scheduled again until scaleMinTasks tasks have gone
// through, so its figure is not one fraction of a millisecond.

// ScaleShapes are the graph shapes RunScale measures.
var ScaleShapes = []string{"chain", "wide", "random3"}

// ScaleSlots is how many tasks the measuring loop keeps running at once.
const ScaleSlots = 8

// ScaleOptions configure RunScale. Zero fields take defaults.
type ScaleOptions struct {
	// Ns are the task counts; nil means 1k, 10k, 100k and 1M.
	Ns []int
	// Shapes are the graph shapes (of ScaleShapes); nil means all.
	Shapes []string
	// Reps is the number of alternating rounds; 0 means 5. Each round
	// measures every shape at every N once; figures are medians.
	Reps int
	// NoProgress skips the Progress read after each completion.
	NoProgress bool
	// Progress, when not nil, is called before each measurement.
	Progress func(name string, rep, reps int)
}

// ScaleRow is one cell of the table: a shape at a task count.
type ScaleRow struct {
	Shape string `json:"shape"`
	N     int    `json:"n"`
	// NsPerTask is the median time (the thread's CPU time on Linux) of
	// Acquire, Complete (and Progress) per
	// task; SetupNsPerTask that of NewScheduler.
	NsPerTask      float64 `json:"ns_per_task"`
	SetupNsPerTask float64 `json:"setup_ns_per_task"`
	// GraphBytesPerTask is the heap the input graph holds; SchedBytesPerTask
	// what NewScheduler adds and the run keeps, at its largest (sampled
	// after setup and after the run).
	GraphBytesPerTask float64 `json:"graph_bytes_per_task"`
	SchedBytesPerTask float64 `json:"sched_bytes_per_task"`
	// PeakRSSBytesPerTask is the growth of the process's peak RSS (VmHWM,
	// reset through /proc/self/clear_refs) over the whole measurement,
	// graph included, per task; 0 where Linux does not tell.
	PeakRSSBytesPerTask float64 `json:"peak_rss_bytes_per_task"`
}

// ScaleGraph returns a graph of n tasks of the given shape: "chain" (each
// task depends on the one before), "wide" (one root, n-2 tasks that depend
// on it, one task that depends on all of those: a header, compiles, a link)
// or "random3" (each task depends on three distinct earlier ones chosen
// uniformly, seeded by n).
func ScaleGraph(shape string, n int) (*buildgraph.Graph, error) {
	cmd := []string{"true"}
	g := &buildgraph.Graph{Tasks: make([]*buildgraph.Task, n)}
	for i := range g.Tasks {
		g.Tasks[i] = &buildgraph.Task{ID: "t" + strconv.Itoa(i), Cmd: cmd}
	}
	r := rand.New(rand.NewPCG(uint64(n), 3))
	switch shape {
	case "chain":
		for i := 1; i < n; i++ {
			g.Tasks[i].Deps = []string{g.Tasks[i-1].ID}
		}
	case "wide":
		if n < 3 {
			break
		}
		sink := g.Tasks[n-1]
		sink.Deps = make([]string, 0, n-2)
		for i := 1; i < n-1; i++ {
			g.Tasks[i].Deps = []string{g.Tasks[0].ID}
			sink.Deps = append(sink.Deps, g.Tasks[i].ID)
		}
	case "random3":
		for i := 3; i < n; i++ {
			var d [3]int
			for k := range d {
			again:
				d[k] = r.IntN(i)
				if slices.Contains(d[:k], d[k]) {
					goto again
				}
			}
			g.Tasks[i].Deps = []string{g.Tasks[d[0]].ID, g.Tasks[d[1]].ID, g.Tasks[d[2]].ID}
		}
	default:
		return nil, fmt.Errorf("bench: ScaleGraph: unknown shape %q (want one of %v)", shape, ScaleShapes)
	}
	return g, nil
}

// RunScale measures every shape at every N, alternating them round by
// round, and returns one row per shape and N.
func RunScale(ctx context.Context, o ScaleOptions) ([]ScaleRow, error) {
	if o.Ns == nil {
		o.Ns = []int{1_000, 10_000, 100_000, 1_000_000}
	}
	if o.Shapes == nil {
		o.Shapes = ScaleShapes
	}
	if o.Reps <= 0 {
		o.Reps = 5
	}
	type cell struct {
		loop, setup, graphB, schedB, rss []float64
	}
	cells := make([]cell, len(o.Ns)*len(o.Shapes))
	for rep := range o.Reps {
		for si, shape := range o.Shapes {
			for ni, n := range o.Ns {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				if o.Progress != nil {
					o.Progress(fmt.Sprintf("%s n=%d", shape, n), rep+1, o.Reps)
				}
				m, err := scaleOnce(shape, n, !o.NoProgress)
				if err != nil {
					return nil, err
				}
				c := &cells[si*len(o.Ns)+ni]
				c.loop = append(c.loop, m.loop)
				c.setup = append(c.setup, m.setup)
				c.graphB = append(c.graphB, m.graphB)
				c.schedB = append(c.schedB, m.schedB)
				c.rss = append(c.rss, m.rss)
			}
		}
	}
	var rows []ScaleRow
	for si, shape := range o.Shapes {
		for ni, n := range o.Ns {
			c := cells[si*len(o.Ns)+ni]
			f := float64(max(n, 1))
			rows = append(rows, ScaleRow{
				Shape: shape, N: n,
				NsPerTask:           median(c.loop) / f,
				SetupNsPerTask:      median(c.setup) / f,
				GraphBytesPerTask:   median(c.graphB) / f,
				SchedBytesPerTask:   median(c.schedB) / f,
				PeakRSSBytesPerTask: median(c.rss) / f,
			})
		}
	}
	return rows, nil
}

type scaleMeasure struct{ loop, setup, graphB, schedB, rss float64 }

// scaleMinTasks is how many tasks one measurement schedules at least: a
// graph smaller than that is scheduled again (by a new Scheduler) until
// its schedules add up to it, so that a thousand-task schedule, a fraction
// of a millisecond, is not timed alone. Memory is measured on the first.
const scaleMinTasks = 200_000

// scaleOnce builds one graph and drives schedules of it, each by a new
// Scheduler, until scaleMinTasks tasks have been scheduled; loop and
// setup are summed over them, per n tasks.
func scaleOnce(shape string, n int, progress bool) (scaleMeasure, error) {
	var m scaleMeasure
	debug.FreeOSMemory()
	rss0, rssOK := resetPeakRSS()
	h0 := heapInUse()
	g, err := ScaleGraph(shape, n)
	if err != nil {
		return m, err
	}
	h1 := heapInUse()
	m.graphB = float64(h1 - h0)

	var loop, setup time.Duration
	rounds := 0
	for ; rounds == 0 || rounds*n < scaleMinTasks; rounds++ {
		start := time.Now()
		s, err := buildgraph.NewScheduler(g, buildgraph.Limits{Slots: ScaleSlots}, nil)
		if err != nil {
			return m, err
		}
		setup += time.Since(start)
		var h2 int64
		if rounds == 0 {
			h2 = heapInUse()
		}
		runtime.GC() // so that no collection of the last round's garbage runs in this one
		d, err := scaleSchedule(s, shape, n, progress)
		if err != nil {
			return m, err
		}
		loop += d
		if rounds == 0 {
			m.schedB = float64(max(h2, heapInUse()) - h1)
			if rssOK {
				if hwm, ok := peakRSS(); ok {
					m.rss = float64(max(hwm-rss0, 0))
				}
			}
		}
		runtime.KeepAlive(s)
	}
	m.loop = float64(loop.Nanoseconds()) / float64(rounds)
	m.setup = float64(setup.Nanoseconds()) / float64(rounds)
	runtime.KeepAlive(g)
	return m, nil
}

// scaleSchedule drives one schedule of s to its end, keeping ScaleSlots
// tasks running and completing the oldest first, and returns the time it
// took: the CPU time of the thread that ran it, where Linux tells, so that
// what other processes of a shared machine take is not counted; else the
// wall time.
func scaleSchedule(s *buildgraph.Scheduler, shape string, n int, progress bool) (time.Duration, error) {
	ctx := context.Background()
	running := make([]*buildgraph.Task, 0, ScaleSlots)
	var sink int
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cpu0, cpuOK := threadCPU()
	start := time.Now()
	for {
		// Next is Acquire without the wait; Acquire is called when nothing
		// runs, where it cannot wait either.
		for len(running) < ScaleSlots {
			t, ok := s.Next()
			if !ok {
				break
			}
			running = append(running, t)
		}
		if len(running) == 0 {
			t, err := s.Acquire(ctx)
			if errors.Is(err, buildgraph.ErrNoMoreTasks) {
				break
			}
			if err != nil {
				return 0, fmt.Errorf("bench: scale %s n=%d: %v", shape, n, err)
			}
			running = append(running, t)
		}
		t := running[0]
		running = append(running[:0], running[1:]...)
		s.Complete(t, buildgraph.Succeeded)
		if progress {
			p := s.Progress()
			sink += p.Finished() + int(p.WorkLeft+p.PathLeft)
		}
	}
	d := time.Since(start)
	if cpu1, ok := threadCPU(); ok && cpuOK {
		d = cpu1 - cpu0
	}
	if !s.Finished() {
		return d, fmt.Errorf("bench: scale %s n=%d: not finished", shape, n)
	}
	if p := s.Progress(); p.Done[buildgraph.Succeeded] != n {
		return d, fmt.Errorf("bench: scale %s n=%d: %d succeeded", shape, n, p.Done[buildgraph.Succeeded])
	}
	_ = sink
	return d, nil
}

// heapInUse returns the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// resetPeakRSS resets the process's peak RSS to its current RSS (Linux 4.0
// and later: "5" written to /proc/self/clear_refs) and returns that RSS.
func resetPeakRSS() (int64, bool) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return 0, false
	}
	return procStatusBytes("VmRSS:")
}

// peakRSS returns VmHWM, the peak RSS since the last reset.
func peakRSS() (int64, bool) { return procStatusBytes("VmHWM:") }

// procStatusBytes reads a "kB" field of /proc/self/status.
func procStatusBytes(field string) (int64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(data) {
		if rest, ok := bytes.CutPrefix(line, []byte(field)); ok {
			f := bytes.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			kb, err := strconv.ParseInt(string(f[0]), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
