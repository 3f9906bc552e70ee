package buildrun

import (
	"context"
	"strconv"
	"testing"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/runtime"
)

// BenchmarkRunGraph runs a graph of 64 /bin/true tasks (a fan-out of 63
// and a final task that depends on all, like compiles and a link) per op,
// with one slot per worker and with unlimited admission. Compare ns/task
// with runtime's BenchmarkProcessTrue to see what the scheduling adds.
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
	for _, slots := range []int{rt.Workers(), 0} {
		b.Run("slots="+strconv.Itoa(slots), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rep, err := Run(context.Background(), rt, g, Options{Slots: slots})
				if err != nil || !rep.OK() {
					b.Fatalf("err %v counts %v", err, rep.Counts)
				}
				rep.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(g.Tasks)), "ns/task")
		})
	}
}
