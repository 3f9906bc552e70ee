package buildrun

import (
	"context"
	goruntime "runtime"
	"strconv"
	"testing"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/memory"
	"github.com/numasteal/numasteal/runtime"
)

// BenchmarkRunGraph runs a graph of 64 /bin/true tasks (a fan-out of 63
// and a final task that depends on all, like compiles and a link) per op,
// with one slot per worker and with unlimited admission, without and with
// the memory governor (mem=on: what admission by memory and watching each
// task add). Compare ns/task with runtime's BenchmarkProcessTrue to see
// what the scheduling adds.
func BenchmarkRunGraph(b *testing.B) {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	g := &buildgraph.Graph{}
	link := &buildgraph.Task{ID: "link", Cmd: []string{"/bin/true"}}
	for i := range 63 {
		id := "c" + strconv.Itoa(i)
		g.Tasks = append(g.Tasks, &buildgraph.Task{ID: id, Cmd: []string{"/bin/true"}})
		link.Deps = append(link.Deps, id)
	}
	g.Tasks = append(g.Tasks, link)
	src, err := memory.Open("/", 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		slots int
		mem   *MemoryOptions
	}{{rt.Workers(), nil}, {0, nil}, {rt.Workers(), &MemoryOptions{Source: src}}, {0, &MemoryOptions{Source: src}}} {
		name := "slots=" + strconv.Itoa(c.slots)
		if c.mem != nil {
			name += "/mem=on"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rep, err := Run(context.Background(), rt, g, Options{Slots: c.slots, Memory: c.mem})
				if err != nil || !rep.OK() {
					b.Fatalf("err %v counts %v", err, rep.Counts)
				}
				rep.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(g.Tasks)), "ns/task")
		})
	}
}

// BenchmarkRunMemory runs 2000 /bin/true tasks (independent) per op and
// reports the heap the run holds per task once it is over (the Report
// kept), with a history recording every task, a no-op progress callback
// and ReleaseSucceeded, as `numasteal run` has, at -j workers and -j 0.
func BenchmarkRunMemory(b *testing.B) {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	const n = 2000
	g := &buildgraph.Graph{}
	for i := range n {
		g.Tasks = append(g.Tasks, &buildgraph.Task{ID: "c" + strconv.Itoa(i), Cmd: []string{"/bin/true", strconv.Itoa(i)}})
	}
	for _, slots := range []int{rt.Workers(), 0} {
		b.Run("slots="+strconv.Itoa(slots), func(b *testing.B) {
			var held, peak float64
			for b.Loop() {
				h := buildgraph.NewHistory()
				var before goruntime.MemStats
				goruntime.GC()
				goruntime.ReadMemStats(&before)
				var top uint64
				rep, err := Run(context.Background(), rt, g, Options{Slots: slots, History: h, ReleaseSucceeded: true,
					Progress: func(Status) {
						var ms goruntime.MemStats
						if top == 0 || h.Len()%200 == 0 {
							goruntime.ReadMemStats(&ms)
							top = max(top, ms.HeapAlloc)
						}
					}})
				if err != nil || !rep.OK() {
					b.Fatalf("err %v counts %v", err, rep.Counts)
				}
				var after goruntime.MemStats
				goruntime.GC()
				goruntime.ReadMemStats(&after)
				held = float64(after.HeapAlloc-before.HeapAlloc) / n
				peak = float64(top-before.HeapAlloc) / n
				goruntime.KeepAlive(h)
				rep.Close()
			}
			b.ReportMetric(held, "heldB/task")
			b.ReportMetric(peak, "peakB/task")
		})
	}
}
