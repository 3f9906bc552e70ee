package buildgraph_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/numasteal/numasteal/buildgraph"
)

// A scheduler drives a build: take a task, run it (here: pretend), report.
// The long chain's head starts first; the failure of b.o skips the link,
// and keep-going lets the unrelated test run anyway.
func ExampleScheduler() {
	g, err := buildgraph.Parse("build.json", []byte(`{
	  "tasks": [
	    {"id": "test", "shell": "./selftest"},
	    {"id": "a.o",  "cmd": ["cc", "-c", "a.c"]},
	    {"id": "b.o",  "cmd": ["cc", "-c", "b.c"]},
	    {"id": "app",  "cmd": ["cc", "-o", "app", "a.o", "b.o"], "deps": ["a.o", "b.o"], "pool": "link"}
	  ],
	  "pools": {"link": 1}
	}`), buildgraph.FormatAuto)
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := buildgraph.NewScheduler(g, buildgraph.Limits{Slots: 1, KeepGoing: true}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for {
		t, err := s.Acquire(ctx)
		if errors.Is(err, buildgraph.ErrNoMoreTasks) {
			break
		}
		fmt.Println("run", t.ID, "$", t.CommandLine())
		s.Done(t, t.ID != "b.o")
	}
	for _, r := range s.Results() {
		fmt.Println(r.Task.ID, r.Outcome)
	}
	// Output:
	// run a.o $ cc -c a.c
	// run b.o $ cc -c b.c
	// run test $ ./selftest
	// test succeeded
	// a.o succeeded
	// b.o failed
	// app skipped
}

func ExampleGraph_Validate() {
	g := &buildgraph.Graph{Tasks: []*buildgraph.Task{
		{ID: "a", Shell: "true", Deps: []string{"b"}},
		{ID: "b", Shell: "true", Deps: []string{"c"}},
		{ID: "c", Shell: "true", Deps: []string{"a"}},
	}}
	fmt.Println(g.Validate())
	g.Tasks[2].Deps = []string{"d"}
	fmt.Println(g.Validate())
	// Output:
	// cycle: a -> b -> c -> a
	// task "c" depends on unknown task "d"
}

func ExampleSplitWords() {
	words, err := buildgraph.SplitWords(`cc -DNAME="a b" -c 'x y.c'`)
	fmt.Printf("%q %v\n", words, err)
	_, err = buildgraph.SplitWords(`cc -c *.c`)
	fmt.Println(err, errors.Is(err, buildgraph.ErrNeedsShell))
	fmt.Println(buildgraph.QuoteWords(words))
	// Output:
	// ["cc" "-DNAME=a b" "-c" "x y.c"] <nil>
	// at byte 6: glob '*' needs a shell true
	// cc '-DNAME=a b' -c 'x y.c'
}
