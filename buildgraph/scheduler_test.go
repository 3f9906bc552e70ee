package buildgraph

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runSerial takes tasks one at a time, in the order the scheduler gives,
// completing each at once; fail lists the IDs that fail. It returns the
// start order.
func runSerial(t *testing.T, s *Scheduler, fail ...string) []string {
	t.Helper()
	var order []string
	for {
		tk, ok := s.Next()
		if !ok {
			break
		}
		order = append(order, tk.ID)
		s.Done(tk, !contains(fail, tk.ID))
	}
	if !s.Finished() {
		t.Fatalf("not finished after %v; progress %+v", order, s.Progress())
	}
	return order
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func mustScheduler(t *testing.T, g *Graph, lim Limits, h *History) *Scheduler {
	t.Helper()
	s, err := NewScheduler(g, lim, h)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// outcomes maps each task ID to its outcome (and cause, for Skipped).
func outcomes(s *Scheduler) map[string]string {
	m := map[string]string{}
	for _, r := range s.Results() {
		v := r.Outcome.String()
		if r.Cause != nil {
			v += " by " + r.Cause.ID
		}
		m[r.Task.ID] = v
	}
	return m
}

func TestCriticalPathOrder(t *testing.T) {
	// Short independent tasks come first in the file; the chain's head has
	// the longest remaining path and must go first, then the chain while
	// each link outranks the independent tasks. The chain's tail ties with
	// them (priority 1) and goes after them, by graph order.
	g := graphOf("x1", "x2", "x3", "c4:c3", "c3:c2", "c2:c1", "c1")
	s := mustScheduler(t, g, Limits{Slots: 1}, nil)
	want := []string{"c1", "c2", "c3", "x1", "x2", "x3", "c4"}
	if got := runSerial(t, s); !reflect.DeepEqual(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
	for id, p := range map[string]int64{"c1": 4, "c2": 3, "c4": 1, "x1": 1} {
		if got := s.Priority(g.Tasks[indexOf(g, id)]); got != p {
			t.Errorf("Priority(%s) = %d, want %d", id, got, p)
		}
	}
}

func indexOf(g *Graph, id string) int {
	for i, t := range g.Tasks {
		if t.ID == id {
			return i
		}
	}
	panic("no task " + id)
}

func TestCriticalPathWithHistory(t *testing.T) {
	// By count the chain a→b→c is longest, but history says "big" alone
	// takes longer than the whole chain.
	g := graphOf("c:b", "b:a", "a", "big", "new")
	h := NewHistory()
	for _, id := range []string{"a", "b", "c"} {
		h.Record(g.Tasks[indexOf(g, id)], 100*time.Millisecond)
	}
	h.Record(g.Tasks[indexOf(g, "big")], 5*time.Second)
	s := mustScheduler(t, g, Limits{Slots: 1}, h)
	// "new" has no history: it weighs the mean of the known (1325 ms).
	for id, p := range map[string]int64{"big": 5000, "a": 300, "c": 100, "new": 1325} {
		if got := s.Priority(g.Tasks[indexOf(g, id)]); got != p {
			t.Errorf("Priority(%s) = %d, want %d", id, got, p)
		}
	}
	want := []string{"big", "new", "a", "b", "c"}
	if got := runSerial(t, s); !reflect.DeepEqual(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
}

func TestKeepGoing(t *testing.T) {
	g := graphOf("a", "b:a", "c:b", "d", "e:d", "f:c,e")
	s := mustScheduler(t, g, Limits{Slots: 1, KeepGoing: true}, nil)
	runSerial(t, s, "a")
	want := map[string]string{
		"a": "failed", "b": "skipped by a", "c": "skipped by a", "f": "skipped by a",
		"d": "succeeded", "e": "succeeded",
	}
	if got := outcomes(s); !reflect.DeepEqual(got, want) {
		t.Errorf("outcomes = %v, want %v", got, want)
	}
	if p := s.Progress(); p.Done[Failed] != 1 || p.Done[Skipped] != 3 || p.Done[Succeeded] != 2 || p.Finished() != 6 {
		t.Errorf("progress = %+v", p)
	}
}

func TestStopAtFirstFailure(t *testing.T) {
	g := graphOf("a", "b", "c:a", "d:b", "e")
	s := mustScheduler(t, g, Limits{Slots: 2}, nil)
	a, _ := s.Next()
	b, _ := s.Next()
	if a.ID != "a" || b.ID != "b" {
		t.Fatalf("started %s, %s", a.ID, b.ID)
	}
	s.Done(a, false)
	if tk, ok := s.Next(); ok {
		t.Fatalf("Next after a failure = %s", tk.ID)
	}
	if _, err := s.Acquire(context.Background()); !errors.Is(err, ErrNoMoreTasks) {
		t.Fatalf("Acquire after a failure = %v", err)
	}
	if s.Finished() || !s.Stopped() {
		t.Fatalf("Finished = %v, Stopped = %v while b runs", s.Finished(), s.Stopped())
	}
	s.Done(b, true)
	if !s.Finished() {
		t.Fatal("not finished")
	}
	want := map[string]string{"a": "failed", "b": "succeeded", "c": "skipped by a", "d": "not run", "e": "not run"}
	if got := outcomes(s); !reflect.DeepEqual(got, want) {
		t.Errorf("outcomes = %v, want %v", got, want)
	}
}

func TestFailureWhileStopped(t *testing.T) {
	// A running task that fails after the stop still skips its dependents.
	g := graphOf("a", "b", "c:b")
	s := mustScheduler(t, g, Limits{Slots: 2}, nil)
	a, _ := s.Next()
	b, _ := s.Next()
	s.Done(a, false)
	s.Done(b, false)
	want := map[string]string{"a": "failed", "b": "failed", "c": "skipped by b"}
	if got := outcomes(s); !reflect.DeepEqual(got, want) {
		t.Errorf("outcomes = %v, want %v", got, want)
	}
}

func TestCancel(t *testing.T) {
	g := graphOf("a", "b", "c:a", "d")
	s := mustScheduler(t, g, Limits{Slots: 2}, nil)
	a, _ := s.Next()
	b, _ := s.Next()
	s.Cancel()
	if _, ok := s.Next(); ok || s.Finished() {
		t.Fatal("handed out a task after Cancel, or finished with tasks running")
	}
	s.Complete(a, Canceled)
	s.Done(b, true)
	want := map[string]string{"a": "canceled", "b": "succeeded", "c": "canceled", "d": "canceled"}
	if got := outcomes(s); !reflect.DeepEqual(got, want) || !s.Finished() {
		t.Errorf("outcomes = %v, want %v", got, want)
	}
	s.Cancel() // after the end: no effect
}

func TestCanceledTaskCancelsSchedule(t *testing.T) {
	s := mustScheduler(t, graphOf("a", "b"), Limits{Slots: 1}, nil)
	a, _ := s.Next()
	s.Complete(a, Canceled)
	if got := outcomes(s); got["b"] != "canceled" || !s.Finished() {
		t.Errorf("outcomes = %v", got)
	}
}

func TestPoolsAndBackfill(t *testing.T) {
	g := &Graph{Pools: map[string]int{"link": 1}}
	for _, id := range []string{"l1", "l2", "l3"} {
		g.Tasks = append(g.Tasks, &Task{ID: id, Shell: "ld", Pool: "link"})
	}
	g.Tasks = append(g.Tasks, &Task{ID: "cc", Shell: "cc"})
	s := mustScheduler(t, g, Limits{Slots: 8}, nil)
	var got []string
	for {
		tk, ok := s.Next()
		if !ok {
			break
		}
		got = append(got, tk.ID)
	}
	// One linker at a time; the compile is not held up behind the pool.
	if want := []string{"l1", "cc"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("started %v, want %v", got, want)
	}
	s.Done(g.Tasks[0], true)
	if tk, ok := s.Next(); !ok || tk.ID != "l2" {
		t.Fatalf("after l1: Next = %v, %v", tk, ok)
	}
}

func TestSlotsAndMemory(t *testing.T) {
	g := &Graph{Tasks: []*Task{
		{ID: "wide", Shell: "x", CPUs: 3},
		{ID: "fat1", Shell: "x", MemMB: 600},
		{ID: "fat2", Shell: "x", MemMB: 600},
		{ID: "thin", Shell: "x"},
	}}
	s := mustScheduler(t, g, Limits{Slots: 4, MemMB: 1000}, nil)
	var got []string
	for {
		tk, ok := s.Next()
		if !ok {
			break
		}
		got = append(got, tk.ID)
	}
	// wide takes 3 of 4 slots, fat1 the last one; nothing else fits.
	if want := []string{"wide", "fat1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("started %v, want %v", got, want)
	}
	if p := s.Progress(); p.SlotsUsed != 4 || p.MemUsedMB != 600 || p.Running != 2 || p.Ready != 2 {
		t.Errorf("progress = %+v", p)
	}
	s.Done(g.Tasks[0], true) // frees 3 slots: fat2 still lacks memory
	if tk, ok := s.Next(); !ok || tk.ID != "thin" {
		t.Fatalf("Next = %v, %v; want thin", tk, ok)
	}
	if tk, ok := s.Next(); ok {
		t.Fatalf("Next = %s; fat2 must wait for memory", tk.ID)
	}
}

func TestUnlimitedSlots(t *testing.T) {
	g := graphOf("a", "b", "c", "d:a")
	g.Tasks[1].CPUs = 64
	s := mustScheduler(t, g, Limits{}, nil)
	n := 0
	for {
		if _, ok := s.Next(); !ok {
			break
		}
		n++
	}
	if n != 3 {
		t.Errorf("Slots 0 handed out %d ready tasks, want all 3", n)
	}
}

func TestAcquireWaits(t *testing.T) {
	g := graphOf("a", "b:a")
	s := mustScheduler(t, g, Limits{Slots: 4}, nil)
	ctx := context.Background()
	a, err := s.Acquire(ctx)
	if err != nil || a.ID != "a" {
		t.Fatalf("Acquire = %v, %v", a, err)
	}
	got := make(chan *Task)
	go func() {
		b, err := s.Acquire(ctx)
		if err != nil {
			t.Errorf("Acquire: %v", err)
		}
		got <- b
	}()
	// The second Acquire blocks once it has found nothing and registered
	// for a change: wait for that rather than for a time.
	for deadline := time.Now().Add(time.Minute); !s.hasWaiter(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the second Acquire never blocked")
		}
	}
	select {
	case b := <-got:
		t.Fatalf("Acquire returned %v before a finished", b)
	default:
	}
	s.Done(a, true)
	b := <-got
	if b.ID != "b" {
		t.Fatalf("Acquire = %s", b.ID)
	}
	if _, err := s.Acquire(ctx); !errors.Is(err, ErrNoMoreTasks) {
		t.Fatalf("Acquire with all started = %v", err)
	}
	waited := make(chan error)
	go func() { waited <- s.Wait(ctx) }()
	s.Done(b, true)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
}

func TestAcquireContext(t *testing.T) {
	s := mustScheduler(t, graphOf("a", "b:a"), Limits{}, nil)
	s.Next()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := s.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Acquire = %v, want deadline exceeded", err)
	}
	if err := s.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait = %v, want deadline exceeded", err)
	}
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := s.Acquire(done); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire(canceled) = %v", err)
	}
}

func TestEmptyGraph(t *testing.T) {
	s := mustScheduler(t, &Graph{}, Limits{}, nil)
	if !s.Finished() {
		t.Error("empty schedule not finished")
	}
	if _, err := s.Acquire(context.Background()); !errors.Is(err, ErrNoMoreTasks) {
		t.Errorf("Acquire = %v", err)
	}
	if err := s.Wait(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestResultTimes(t *testing.T) {
	g := graphOf("a", "b")
	s := mustScheduler(t, g, Limits{Slots: 1}, nil)
	s.base = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var clock time.Duration
	s.since = func() int64 { clock += time.Second; return int64(clock) }
	runSerial(t, s)
	r := s.Result(g.Tasks[1])
	if r.Outcome != Succeeded || r.End.Sub(r.Start) != time.Second || r.Start.Second() != 3 {
		t.Errorf("Result = %+v", r)
	}
}

func TestMisusePanics(t *testing.T) {
	g := graphOf("a", "b")
	s := mustScheduler(t, g, Limits{}, nil)
	for _, tt := range []struct {
		name string
		f    func()
	}{
		{"not running", func() { s.Done(g.Tasks[0], true) }},
		{"foreign task", func() { s.Done(&Task{ID: "a"}, true) }},
		{"wrong outcome", func() { tk, _ := s.Next(); s.Complete(tk, Skipped) }},
		{"twice", func() { tk, _ := s.Next(); s.Done(tk, true); s.Done(tk, true) }},
	} {
		name, f := tt.name, tt.f
		func() {
			defer func() {
				r := recover()
				if msg, ok := r.(string); !ok || !strings.HasPrefix(msg, "buildgraph: Scheduler.") {
					t.Errorf("%s: recovered %v", name, r)
				}
			}()
			f()
		}()
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{Unfinished: "unfinished", Succeeded: "succeeded", NotRun: "not run", Canceled: "canceled", 99: "Outcome(99)"} {
		if o.String() != want {
			t.Errorf("%d.String() = %q", o, o.String())
		}
	}
	if !Failed.Ran() || Skipped.Ran() {
		t.Error("Ran")
	}
}

func TestProgressEstimates(t *testing.T) {
	g := graphOf("a", "b:a", "c:b", "x")
	h := NewHistory()
	h.Record(g.Tasks[0], 100*time.Millisecond)
	h.Record(g.Tasks[1], 200*time.Millisecond)
	h.Record(g.Tasks[2], 300*time.Millisecond)
	// x has no history: the mean, 200 ms.
	s := mustScheduler(t, g, Limits{Slots: 1}, h)
	if p := s.Progress(); !p.Timed || p.WorkLeft != 800 || p.PathLeft != 600 || p.Ready != 2 || p.Waiting != 2 {
		t.Errorf("start: %+v", p)
	}
	a, _ := s.Next()
	s.Done(a, true)
	if p := s.Progress(); p.WorkLeft != 700 || p.PathLeft != 500 {
		t.Errorf("after a: %+v", p)
	}
	runSerial(t, s)
	if p := s.Progress(); p.WorkLeft != 0 || p.PathLeft != 0 {
		t.Errorf("end: %+v", p)
	}
	// Without history the estimates count tasks.
	s = mustScheduler(t, g, Limits{Slots: 1}, nil)
	if p := s.Progress(); p.Timed || p.WorkLeft != 4 || p.PathLeft != 3 {
		t.Errorf("untimed: %+v", p)
	}
}

func TestProgressUntimedWithUnrelatedHistory(t *testing.T) {
	h := NewHistory()
	h.Record(&Task{ID: "elsewhere", Shell: "other"}, time.Hour)
	s := mustScheduler(t, graphOf("a", "b:a"), Limits{}, h)
	if p := s.Progress(); p.Timed || p.WorkLeft != 2 || p.PathLeft != 2 {
		t.Errorf("progress = %+v", p)
	}
}

// hasWaiter reports whether a goroutine waits in Acquire or Wait for a
// change of the schedule.
func (s *Scheduler) hasWaiter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed != nil
}

// TestTaskInTwoSchedules schedules the same tasks in two graphs that order
// them differently, at once: each Scheduler records its own positions in
// the tasks, and the other still finds them.
func TestTaskInTwoSchedules(t *testing.T) {
	g1 := graphOf("a", "b", "c")
	g2 := &Graph{Tasks: []*Task{g1.Tasks[2], g1.Tasks[1], g1.Tasks[0]}}
	s1 := mustScheduler(t, g1, Limits{Slots: 1}, nil)
	s2 := mustScheduler(t, g2, Limits{Slots: 1}, nil)
	if got := runSerial(t, s1); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("first graph ran %v", got)
	}
	if got := runSerial(t, s2); !slices.Equal(got, []string{"c", "b", "a"}) {
		t.Errorf("second graph ran %v", got)
	}
	for _, s := range []*Scheduler{s1, s2} {
		for _, tk := range g1.Tasks {
			if r := s.Result(tk); r.Outcome != Succeeded || r.Task != tk {
				t.Errorf("Result(%s) = %+v", tk.ID, r)
			}
		}
	}
	copied := *g1.Tasks[0]
	defer func() {
		if recover() == nil {
			t.Error("Result of a copy of a task did not panic")
		}
	}()
	s1.Result(&copied)
}

// TestManyDependencies schedules a task that depends on many others, on
// either side of the count a byte holds (unmet.go): it runs once all of
// them succeed, and is Skipped, never started, when one fails and the rest
// succeed (KeepGoing).
func TestManyDependencies(t *testing.T) {
	for _, deps := range []int{1, 252, 253, 254, 255, 256, 1000} {
		for _, fail := range []bool{false, true} {
			g := &Graph{}
			sink := &Task{ID: "sink", Shell: "true"}
			for i := range deps {
				id := "d" + strconv.Itoa(i)
				g.Tasks = append(g.Tasks, &Task{ID: id, Shell: "true"})
				sink.Deps = append(sink.Deps, id)
			}
			g.Tasks = append(g.Tasks, sink)
			s := mustScheduler(t, g, Limits{Slots: 3, KeepGoing: true}, nil)
			var failed []string
			if fail {
				failed = []string{"d" + strconv.Itoa(deps/2)}
			}
			order := runSerial(t, s, failed...)
			r := s.Result(sink)
			switch {
			case fail && (r.Outcome != Skipped || slices.Contains(order, "sink")):
				t.Errorf("%d deps, one failed: sink %v, ran %d tasks", deps, r.Outcome, len(order))
			case !fail && (r.Outcome != Succeeded || order[len(order)-1] != "sink"):
				t.Errorf("%d deps: sink %v, ran last %q", deps, r.Outcome, order[len(order)-1])
			}
		}
	}
}
