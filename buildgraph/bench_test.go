package buildgraph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// buildLike returns a graph shaped like a C project: n compiles, each
// depending on one of a few generated headers, then a link of them all.
func buildLike(n int) *Graph {
	g := &Graph{Pools: map[string]int{"link": 1}}
	for i := range 4 {
		g.Tasks = append(g.Tasks, &Task{ID: fmt.Sprintf("gen%d.h", i), Cmd: []string{"gen", fmt.Sprint(i)}})
	}
	link := &Task{ID: "app", Cmd: []string{"cc", "-o", "app"}, Pool: "link", CPUs: 2}
	for i := range n {
		id := fmt.Sprintf("obj/f%d.o", i)
		g.Tasks = append(g.Tasks, &Task{ID: id, Cmd: []string{"cc", "-c", fmt.Sprintf("f%d.c", i)},
			Deps: []string{fmt.Sprintf("gen%d.h", i%4)}, MemMB: 100})
		link.Deps = append(link.Deps, id)
	}
	g.Tasks = append(g.Tasks, link)
	return g
}

// BenchmarkSchedule measures a whole schedule of a 5000-file build on 16
// slots: NewScheduler, then Next and Done for every task, the way an
// executor drives it (16 running, one completion per start).
func BenchmarkSchedule(b *testing.B) {
	g := buildLike(5000)
	b.ReportAllocs()
	for b.Loop() {
		s, err := NewScheduler(g, Limits{Slots: 16, MemMB: 8000}, nil)
		if err != nil {
			b.Fatal(err)
		}
		var running []*Task
		for !s.Finished() {
			for {
				t, ok := s.Next()
				if !ok {
					break
				}
				running = append(running, t)
			}
			t := running[0]
			running = running[1:]
			s.Done(t, true)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(g.Tasks)), "ns/task")
}

// BenchmarkScheduleUnlimited is BenchmarkSchedule with Slots 0 (-j 0):
// every ready task is handed out at once.
func BenchmarkScheduleUnlimited(b *testing.B) {
	g := buildLike(5000)
	b.ReportAllocs()
	for b.Loop() {
		s, _ := NewScheduler(g, Limits{}, nil)
		var running []*Task
		for !s.Finished() {
			for {
				t, ok := s.Next()
				if !ok {
					break
				}
				running = append(running, t)
			}
			for _, t := range running {
				s.Done(t, true)
			}
			running = running[:0]
		}
	}
}

// BenchmarkParseGraph measures loading and validating a 5000-task JSON
// build graph.
func BenchmarkParseGraph(b *testing.B) {
	doc := graphDoc(buildLike(5000))
	data, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("build.json", data, FormatAuto); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSplitWords measures splitting a typical compile command.
func BenchmarkSplitWords(b *testing.B) {
	const cmd = `/usr/bin/cc -DNDEBUG -DNAME="numa steal" -I/src/include -I/src/build/gen -O2 -g -Wall -Wextra -fPIC -o obj/f1.o -c /src/f1.c`
	b.SetBytes(int64(len(cmd)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SplitWords(cmd); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadHistory reads a 10000-entry history file (ns/op over
// 10000 is the cost per entry), in the form WriteTo writes and in that of
// version 1, which goes through encoding/json.
func BenchmarkLoadHistory(b *testing.B) {
	h := NewHistory()
	for i := range 10000 {
		t := &Task{ID: fmt.Sprintf("obj/f%d.o", i), Cmd: []string{"cc", "-c", fmt.Sprintf("f%d.c", i)}}
		for r := range 3 {
			h.Record(t, time.Duration(100+i%50+r)*time.Millisecond)
		}
	}
	var buf bytes.Buffer
	h.WriteTo(&buf)
	v2 := buf.Bytes()
	v1 := []byte(historyHeaderV1 + "\n" + strings.ReplaceAll(string(v2[bytes.IndexByte(v2, '\n')+1:]), `"ms":[`, `"ms": [`))
	for _, c := range []struct {
		name string
		data []byte
	}{{"v2", v2}, {"v1", v1}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ReadHistory(bytes.NewReader(c.data), "h"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSaveHistory writes a 10000-entry history.
func BenchmarkSaveHistory(b *testing.B) {
	h := NewHistory()
	for i := range 10000 {
		h.Record(&Task{ID: fmt.Sprintf("obj/f%d.o", i), Cmd: []string{"cc", "-c", fmt.Sprintf("f%d.c", i)}}, time.Second)
	}
	b.ReportAllocs()
	for b.Loop() {
		h.WriteTo(io.Discard)
	}
}

// BenchmarkHistoryVsGraph loads, alternately within each iteration, the
// history of a 100k-file build (three durations per compile) and that
// build's graph in JSON, and reports each one's time and their ratio: a
// history must cost no more to load than the graph it weights.
func BenchmarkHistoryVsGraph(b *testing.B) {
	const n = 100_000
	g := buildLike(n)
	h := NewHistory()
	for _, t := range g.Tasks {
		for r := range 3 {
			h.Record(t, time.Duration(100+r)*time.Millisecond)
		}
	}
	var hist bytes.Buffer
	if _, err := h.WriteTo(&hist); err != nil {
		b.Fatal(err)
	}
	graph, err := json.Marshal(graphDoc(g))
	if err != nil {
		b.Fatal(err)
	}
	var histNs, graphNs time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := ReadHistory(bytes.NewReader(hist.Bytes()), "h"); err != nil {
			b.Fatal(err)
		}
		histNs += time.Since(start)
		start = time.Now()
		if _, err := Parse("build.json", graph, FormatAuto); err != nil {
			b.Fatal(err)
		}
		graphNs += time.Since(start)
	}
	b.ReportMetric(float64(histNs.Nanoseconds())/float64(b.N), "history-ns/op")
	b.ReportMetric(float64(graphNs.Nanoseconds())/float64(b.N), "graph-ns/op")
	b.ReportMetric(float64(histNs)/float64(graphNs), "history/graph")
}

// graphDoc is g in the JSON graph format.
func graphDoc(g *Graph) any {
	type jt struct {
		ID    string   `json:"id"`
		Cmd   []string `json:"cmd"`
		Deps  []string `json:"deps,omitempty"`
		CPUs  int      `json:"cpus,omitempty"`
		MemMB int      `json:"mem_mb,omitempty"`
		Pool  string   `json:"pool,omitempty"`
	}
	var doc struct {
		Tasks []jt           `json:"tasks"`
		Pools map[string]int `json:"pools"`
	}
	for _, t := range g.Tasks {
		doc.Tasks = append(doc.Tasks, jt{t.ID, t.Cmd, t.Deps, t.CPUs, t.MemMB, t.Pool})
	}
	doc.Pools = g.Pools
	return doc
}
