package buildgraph

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// graphOf builds a graph from "id:dep,dep" specs, task "x" running "echo x".
func graphOf(specs ...string) *Graph {
	g := &Graph{}
	for _, s := range specs {
		id, deps, _ := strings.Cut(s, ":")
		t := &Task{ID: id, Shell: "echo " + id}
		if deps != "" {
			t.Deps = strings.Split(deps, ",")
		}
		g.Tasks = append(g.Tasks, t)
	}
	return g
}

func TestValidateCycles(t *testing.T) {
	for _, tt := range []struct {
		specs []string
		want  string
	}{
		{[]string{"a:a"}, "cycle: a -> a"},
		{[]string{"a:b", "b:a"}, "cycle: a -> b -> a"},
		{[]string{"a:b", "b:c", "c:a"}, "cycle: a -> b -> c -> a"},
		// Named from the task first in the graph, in dependency order.
		{[]string{"x", "c:a", "a:x,b", "b:c"}, "cycle: c -> a -> b -> c"},
		// A cycle below an acyclic prefix.
		{[]string{"top:m", "m:n", "n:p", "p:n"}, "cycle: n -> p -> n"},
		// Diamonds are not cycles.
		{[]string{"a:b,c", "b:d", "c:d", "d"}, ""},
		{[]string{"a:b,b", "b"}, ""},
	} {
		err := graphOf(tt.specs...).Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: Validate = %v, want nil", tt.specs, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want):
			t.Errorf("%v: Validate = %v, want %q", tt.specs, err, tt.want)
		case tt.want != "" && !errors.Is(err, ErrCycle):
			t.Errorf("%v: error is not ErrCycle", tt.specs)
		}
	}
}

func TestValidateLongChain(t *testing.T) {
	// Deep enough that a recursive search would be in trouble on a small
	// stack; closing the chain into a loop must be found and named.
	const n = 50000
	g := &Graph{}
	for i := range n {
		tk := &Task{ID: "t" + strconv.Itoa(i), Shell: "true"}
		if i > 0 {
			tk.Deps = []string{"t" + strconv.Itoa(i-1)}
		}
		g.Tasks = append(g.Tasks, tk)
	}
	if err := g.Validate(); err != nil {
		t.Fatalf("chain: %v", err)
	}
	g.Tasks[0].Deps = []string{"t" + strconv.Itoa(n-1)}
	err := g.Validate()
	const want = "cycle of 50000 tasks: t0 -> t49999 -> t49998 -> t49997 -> ... -> t4 -> t3 -> t2 -> t1 -> t0"
	if !errors.Is(err, ErrCycle) || err.Error() != want {
		msg := ""
		if err != nil {
			msg = err.Error()[:min(len(err.Error()), 100)]
		}
		t.Fatalf("loop: %s", msg)
	}
}

func TestValidateProblems(t *testing.T) {
	for _, tt := range []struct {
		name string
		g    *Graph
		want []string
		kind error
	}{
		{"unknown dep", graphOf("a", "b:a,x"), []string{`task "b" depends on unknown task "x"`}, ErrUnknownDep},
		{"all unknown deps", graphOf("a:y", "b:a,x"), []string{
			`task "a" depends on unknown task "y"`,
			`task "b" depends on unknown task "x"`}, ErrUnknownDep},
		{"duplicate", graphOf("a", "b", "a"), []string{`duplicate task id "a" (tasks[0] and tasks[2])`}, ErrDuplicate},
		{"empty id", &Graph{Tasks: []*Task{{Shell: "true"}}}, []string{`tasks[0] has an empty ID`}, ErrField},
		{"nil task", &Graph{Tasks: []*Task{nil}}, []string{`tasks[0] is nil`}, ErrField},
		{"both", &Graph{Tasks: []*Task{{ID: "a", Shell: "true", Cmd: []string{"true"}}}}, []string{`task "a" has both Cmd and Shell`}, ErrField},
		{"none", &Graph{Tasks: []*Task{{ID: "a"}}}, []string{`task "a" has no command`}, ErrField},
		{"empty argv", &Graph{Tasks: []*Task{{ID: "a", Cmd: []string{}}}}, []string{`task "a" has no program name in Cmd`}, ErrField},
		{"negative", &Graph{Tasks: []*Task{{ID: "a", Shell: "x", CPUs: -1, MemMB: -2}}}, []string{
			`task "a" needs -1 CPUs; must be at least 0`,
			`task "a" needs -2 MB of memory; must be at least 0`}, ErrField},
		{"undeclared pool", &Graph{Tasks: []*Task{{ID: "a", Shell: "x", Pool: "link"}}}, []string{
			`task "a" uses pool "link", which is not declared`}, ErrPool},
		{"pool limit", &Graph{Pools: map[string]int{"b": 0, "a": -1}}, []string{
			`pool "a" has limit -1; a pool limit must be at least 1`,
			`pool "b" has limit 0; a pool limit must be at least 1`}, ErrPool},
	} {
		err := tt.g.Validate()
		want := strings.Join(tt.want, "\n")
		if err == nil || err.Error() != want {
			t.Errorf("%s: Validate =\n%v\nwant\n%s", tt.name, err, want)
			continue
		}
		if !errors.Is(err, tt.kind) {
			t.Errorf("%s: error is not %v", tt.name, tt.kind)
		}
	}
}

func TestValidateManyProblems(t *testing.T) {
	g := &Graph{}
	for i := range 30 {
		g.Tasks = append(g.Tasks, &Task{ID: strconv.Itoa(i), Shell: "x", Deps: []string{"nope"}})
	}
	err := g.Validate()
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxErrors+1 || lines[maxErrors] != "and 10 more problems" {
		t.Errorf("Validate gave %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestNewSchedulerLimits(t *testing.T) {
	g := &Graph{Tasks: []*Task{
		{ID: "small", Shell: "x"},
		{ID: "wide", Shell: "x", CPUs: 8},
		{ID: "fat", Shell: "x", MemMB: 5000},
	}}
	_, err := NewScheduler(g, Limits{Slots: 4, MemMB: 4096}, nil)
	want := `task "wide" needs 8 CPU slots, more than the 4 available` + "\n" +
		`task "fat" needs 5000 MB of memory, more than the 4096 MB limit`
	if err == nil || err.Error() != want || !errors.Is(err, ErrTooBig) {
		t.Errorf("NewScheduler = %v, want\n%s", err, want)
	}
	// No limits: everything fits.
	if _, err := NewScheduler(g, Limits{}, nil); err != nil {
		t.Errorf("NewScheduler(no limits) = %v", err)
	}
	if _, err := NewScheduler(g, Limits{Slots: -1}, nil); err == nil {
		t.Error("NewScheduler(negative slots) succeeded")
	}
	// An invalid graph is refused.
	if _, err := NewScheduler(graphOf("a:b", "b:a"), Limits{}, nil); !errors.Is(err, ErrCycle) {
		t.Errorf("NewScheduler(cycle) = %v", err)
	}
}
