package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/numasteal/numasteal/proc"
	"github.com/numasteal/numasteal/runtime"
)

func newRuntime(t *testing.T) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// The names follow the Prometheus conventions, as client_golang's linter
// checks them.
func TestLint(t *testing.T) {
	rt := newRuntime(t)
	r, err := proc.NewRunner(rt, proc.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, c := range []prometheus.Collector{NewRuntimeCollector(rt), NewRunnerCollector(r)} {
		problems, err := testutil.CollectAndLint(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
}

// The counters count what ran: fib's tasks are spawned and run, the root
// injected.
func TestRuntimeCounters(t *testing.T) {
	rt := newRuntime(t)
	c := NewRuntimeCollector(rt)
	var fib func(x *runtime.Ctx, n int) int
	fib = func(x *runtime.Ctx, n int) int {
		if n < 2 {
			return n
		}
		var a int
		g := x.Group()
		x.Go(g, func(x *runtime.Ctx) error { a = fib(x, n-1); return nil })
		b := fib(x, n-2)
		x.Wait(g)
		return a + b
	}
	if err := rt.Go(context.Background(), func(x *runtime.Ctx) error { fib(x, 18); return nil }).Wait(); err != nil {
		t.Fatal(err)
	}
	// An idle runtime's workers all park: the gauge reads that.
	parked := func() float64 {
		return testutil.ToFloat64(prometheus.CollectorFunc(func(ch chan<- prometheus.Metric) {
			collectOnly(c, "numasteal_parked_workers", ch)
		}))
	}
	for deadline := time.Now().Add(30 * time.Second); parked() != float64(rt.Workers()); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("parked_workers = %v after 30 s idle, want %d", parked(), rt.Workers())
		}
	}
	rt.Close() // every worker folds its counters
	if n := testutil.ToFloat64(prometheus.CollectorFunc(func(ch chan<- prometheus.Metric) {
		collectOnly(c, "numasteal_tasks_injected_total", ch)
	})); n != 1 {
		t.Errorf("tasks_injected_total = %v, want 1", n)
	}
	// fib(18) spawns fib(19)-1 = 4180 tasks, and the root runs too.
	want := `
# HELP numasteal_tasks_run_total Tasks the workers ran.
# TYPE numasteal_tasks_run_total counter
numasteal_tasks_run_total 4181
# HELP numasteal_tasks_spawned_total Tasks spawned by running tasks onto their worker's deque or LIFO slot.
# TYPE numasteal_tasks_spawned_total counter
numasteal_tasks_spawned_total 4180
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "numasteal_tasks_run_total", "numasteal_tasks_spawned_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(c, "numasteal_steals_total"); n != len(rt.Stats().Levels) {
		t.Errorf("%d steals_total series, want one per level (%v)", n, rt.Stats().Levels)
	}
}

// collectOnly sends c's metrics named name to ch.
func collectOnly(c prometheus.Collector, name string, ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric)
	go func() { c.Collect(all); close(all) }()
	for m := range all {
		if strings.Contains(m.Desc().String(), `"`+name+`"`) {
			ch <- m
		}
	}
}

func TestSplitLevel(t *testing.T) {
	for _, tt := range []struct{ in, level, distance string }{
		{"SMT", "SMT", ""}, {"LLC", "LLC", ""}, {"NUMA(20)", "NUMA", "20"}, {"NUMA(", "NUMA(", ""},
	} {
		if l, d := splitLevel(tt.in); l != tt.level || d != tt.distance {
			t.Errorf("splitLevel(%q) = %q, %q; want %q, %q", tt.in, l, d, tt.level, tt.distance)
		}
	}
}

func TestRunnerCollector(t *testing.T) {
	rt := newRuntime(t)
	r, err := proc.NewRunner(rt, proc.Config{Slots: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := `
# HELP numasteal_process_slots Process slots of the runner: how many slots running processes may hold together.
# TYPE numasteal_process_slots gauge
numasteal_process_slots 3
# HELP numasteal_process_slots_used Process slots held by running processes (and those about to fork).
# TYPE numasteal_process_slots_used gauge
numasteal_process_slots_used 0
`
	if err := testutil.CollectAndCompare(NewRunnerCollector(r), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
