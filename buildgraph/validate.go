package buildgraph

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Validate checks the graph as a whole and reports every problem it finds
// (up to 20), each an *Error naming the task and, for a loaded graph, the
// place: a task without an ID or command, or with both Cmd and Shell;
// negative CPUs or MemMB; duplicate IDs; a dependency on an unknown ID
// ("task \"b\" depends on unknown task \"x\""); a pool that is used but not
// declared, or declared with a limit below 1; and a dependency cycle, named
// in order from the task that comes first in the graph, each arrow reading
// "depends on" ("cycle: a -> b -> c -> a").
//
// One problem is returned as its *Error; several are joined with
// errors.Join, one per line. Validate does not change the graph.
func (g *Graph) Validate() error {
	_, err := g.validate()
	return err
}

// validate is Validate that also returns, when the graph is valid, each
// task's dependencies as task indices without repeats (the lookups of
// every ID, done once for both).
func (g *Graph) validate() ([][]int, error) {
	v := validator{g: g, index: make(map[string]int, len(g.Tasks))}
	v.tasks()
	v.pools()
	v.deps()
	if !v.badDeps {
		v.cycles()
	}
	if err := v.result(); err != nil {
		return nil, err
	}
	return v.adj, nil
}

type validator struct {
	g       *Graph
	index   map[string]int // task ID → first index
	adj     [][]int        // each task's dependencies, as indices (deps)
	errs    []error
	more    int  // problems beyond maxErrors
	badDeps bool // some task is nil or some dependency unknown
}

func (v *validator) add(pos Pos, task string, kind error, format string, args ...any) {
	if len(v.errs) >= maxErrors {
		v.more++
		return
	}
	v.errs = append(v.errs, &Error{Pos: pos, Task: task, Msg: fmt.Sprintf(format, args...), Err: kind})
}

func (v *validator) result() error {
	switch {
	case len(v.errs) == 0:
		return nil
	case len(v.errs) == 1:
		return v.errs[0]
	}
	if v.more > 0 {
		v.errs = append(v.errs, fmt.Errorf("and %d more problems", v.more))
	}
	return errors.Join(v.errs...)
}

// tasks checks each task on its own, and ID uniqueness.
func (v *validator) tasks() {
	for i, t := range v.g.Tasks {
		if t == nil {
			v.add(Pos{}, "", ErrField, "tasks[%d] is nil", i)
			continue
		}
		if t.ID == "" {
			v.add(t.Pos, "", ErrField, "tasks[%d] has an empty ID", i)
			continue
		}
		if why := badText(t.ID, MaxIDBytes); why != "" {
			v.add(t.Pos, "", ErrField, "tasks[%d]: the task id %s %s", i, quoteID(t.ID), why)
			continue
		}
		if j, dup := v.index[t.ID]; dup {
			first := v.g.Tasks[j]
			if first.Pos.IsZero() {
				v.add(t.Pos, t.ID, ErrDuplicate, "duplicate task id %q (tasks[%d] and tasks[%d])", t.ID, j, i)
			} else {
				v.add(t.Pos, t.ID, ErrDuplicate, "duplicate task id %q (first at %s)", t.ID, first.Pos)
			}
			continue
		}
		v.index[t.ID] = i
		switch {
		case t.Cmd != nil && t.Shell != "":
			v.add(t.Pos, t.ID, ErrField, "task %q has both Cmd and Shell", t.ID)
		case t.Cmd == nil && strings.TrimSpace(t.Shell) == "":
			v.add(t.Pos, t.ID, ErrField, "task %q has no command", t.ID)
		case t.Cmd != nil && (len(t.Cmd) == 0 || t.Cmd[0] == ""):
			v.add(t.Pos, t.ID, ErrField, "task %q has no program name in Cmd", t.ID)
		}
		if why := badCommand(t); why != "" {
			v.add(t.Pos, t.ID, ErrField, "task %q: %s", t.ID, why)
		}
		if t.CPUs < 0 {
			v.add(t.Pos, t.ID, ErrField, "task %q needs %d CPUs; must be at least 0", t.ID, t.CPUs)
		}
		if t.MemMB < 0 {
			v.add(t.Pos, t.ID, ErrField, "task %q needs %d MB of memory; must be at least 0", t.ID, t.MemMB)
		}
		if t.Pool != "" {
			if _, ok := v.g.Pools[t.Pool]; !ok {
				v.add(t.Pos, t.ID, ErrPool, "task %q uses pool %q, which is not declared", t.ID, t.Pool)
			}
		}
	}
}

// pools checks the declared limits, in name order.
func (v *validator) pools() {
	names := make([]string, 0, len(v.g.Pools))
	for name := range v.g.Pools {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if n := v.g.Pools[name]; n < 1 {
			v.add(v.g.poolPos[name], "", ErrPool, "pool %q has limit %d; a pool limit must be at least 1", name, n)
		}
	}
}

// deps checks that every dependency names a task, and resolves them into
// v.adj, dropping repeats.
func (v *validator) deps() {
	v.adj = make([][]int, len(v.g.Tasks))
	seen := make([]int, len(v.g.Tasks)) // seen[j] == i+1: j is already a dep of i
	for i, t := range v.g.Tasks {
		if t == nil {
			v.badDeps = true
			continue
		}
		for _, d := range t.Deps {
			j, ok := v.index[d]
			if !ok {
				v.badDeps = true
				v.add(t.Pos, t.ID, ErrUnknownDep, "task %q depends on unknown task %s", t.ID, quoteID(d))
				continue
			}
			if seen[j] != i+1 {
				seen[j] = i + 1
				v.adj[i] = append(v.adj[i], j)
			}
		}
	}
}

// cycles reports one dependency cycle, if there is any.
func (v *validator) cycles() {
	cyc := findCycle(v.adj)
	if cyc == nil {
		return
	}
	first := v.g.Tasks[cyc[0]]
	v.add(first.Pos, first.ID, ErrCycle, "%s", cycleText(v.g, cyc))
}

// cycleShown is how many tasks of a long cycle its message names at each
// end: a cycle through 10,000 generated tasks once made an 89 KB line.
const cycleShown = 4

// cycleText describes a cycle: "cycle: a -> b -> a" in full when short,
// else its first and last cycleShown tasks and its length, "cycle of 10000
// tasks: t0 -> t1 -> t2 -> t3 -> ... -> t9998 -> t9999 -> t0".
func cycleText(g *Graph, cyc []int) string {
	name := func(n int) string { return g.Tasks[n].ID }
	if len(cyc) <= 2*cycleShown+1 {
		names := make([]string, len(cyc)+1)
		for i, n := range cyc {
			names[i] = name(n)
		}
		names[len(cyc)] = names[0]
		return "cycle: " + strings.Join(names, " -> ")
	}
	var names []string
	for _, n := range cyc[:cycleShown] {
		names = append(names, name(n))
	}
	names = append(names, "...")
	for _, n := range cyc[len(cyc)-cycleShown:] {
		names = append(names, name(n))
	}
	names = append(names, name(cyc[0]))
	return fmt.Sprintf("cycle of %d tasks: %s", len(cyc), strings.Join(names, " -> "))
}

// findCycle returns the nodes of one cycle of the graph whose edges are adj
// (i → adj[i]), in edge order and rotated to start at its smallest node, or
// nil when the graph is acyclic. It is an iterative depth-first search, so
// a chain of a million tasks does not grow the goroutine stack.
func findCycle(adj [][]int) []int {
	const (
		white = iota // not visited
		grey         // on the current path
		black        // finished: no cycle through it
	)
	color := make([]uint8, len(adj))
	type frame struct{ node, next int }
	var stack []frame
	for root := range adj {
		if color[root] != white {
			continue
		}
		stack = append(stack[:0], frame{root, 0})
		color[root] = grey
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == len(adj[top.node]) {
				color[top.node] = black
				stack = stack[:len(stack)-1]
				continue
			}
			to := adj[top.node][top.next]
			top.next++
			switch color[to] {
			case white:
				color[to] = grey
				stack = append(stack, frame{to, 0})
			case grey: // back edge: the path from to up to here is a cycle
				var cyc []int
				for k := len(stack) - 1; k >= 0; k-- {
					cyc = append(cyc, stack[k].node)
					if stack[k].node == to {
						break
					}
				}
				slices.Reverse(cyc)
				m := slices.Index(cyc, slices.Min(cyc))
				return slices.Concat(cyc[m:], cyc[:m])
			}
		}
	}
	return nil
}
