package buildgraph

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The JSON build graph (FormatGraph; the format is described at Format).

// graphFields and taskFields are the accepted keys, in the order errors
// list them.
var (
	graphFields = []string{"tasks", "pools"}
	taskFields  = []string{"id", "cmd", "shell", "deps", "cpus", "mem_mb", "pool", "cwd", "env", "remote"}
)

// parseGraph reads a JSON build graph. It checks each task on its own; the
// graph as a whole is checked by Validate. The tasks array is walked in
// place, not copied out first, since it is nearly all of the file.
func parseGraph(name string, data []byte) (*Graph, error) {
	r := newJSONReader(name, data)
	if err := r.checkSyntax(); err != nil {
		return nil, err
	}
	g := &Graph{Pools: map[string]int{}, poolPos: map[string]Pos{}}
	seen := map[string]bool{}
	start, err := r.members("the build graph", func(key string, keyOff int) error {
		if seen[key] {
			return r.errorf(keyOff, "", ErrField, "the build graph: field %q appears twice", key)
		}
		seen[key] = true
		switch key {
		case "tasks":
			return parseTasks(r, g)
		case "pools":
			f, err := r.value(key, keyOff)
			if err != nil {
				return err
			}
			return parsePools(r, f, g)
		}
		return r.errorf(keyOff, "", ErrField, "unknown top-level field %q (want one of: %s)", key, strings.Join(graphFields, ", "))
	})
	if err != nil {
		return nil, err
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	if !seen["tasks"] {
		return nil, r.errorf(start, "", ErrField, `the build graph has no "tasks" field`)
	}
	return g, nil
}

// parseTasks reads the value of "tasks" from r: an array of tasks. null is
// refused, as a missing "tasks" is: a generator that wrote null has lost
// its tasks, and an empty array says "nothing to do" on purpose.
func parseTasks(r *jsonReader, g *Graph) error {
	if r.peek() == 'n' {
		return r.errorf(r.nextOff(), "", ErrField, `field "tasks": want an array of tasks, got null (write [] for no tasks)`)
	}
	return r.array(`field "tasks"`, func(i int, off int) error {
		t, err := parseTask(r, i)
		if err != nil {
			return err
		}
		g.Tasks = append(g.Tasks, t)
		return nil
	})
}

func parsePools(r *jsonReader, f jsonField, g *Graph) error {
	if isNull(f.val) {
		return nil
	}
	if rawKind(f.val) != "an object" {
		return r.errorf(f.valOff, "", ErrField, `field "pools": want an object of pool limits, got %s`, rawKind(f.val))
	}
	_, pools, err := r.at(f.valOff).object(`field "pools"`)
	if err != nil {
		return err
	}
	for _, p := range pools {
		if p.key == "" {
			return r.errorf(p.keyOff, "", ErrPool, "a pool name must not be empty")
		}
		n, err := json.Number(p.val).Int64()
		if rawKind(p.val) != "a number" || err != nil || n > math.MaxInt32 {
			return r.errorf(p.valOff, "", ErrPool, "pool %q: want a whole number as its limit, got %s", p.key, p.val)
		}
		if n < 1 {
			return r.errorf(p.valOff, "", ErrPool, "pool %q: limit must be at least 1, got %d", p.key, n)
		}
		g.Pools[p.key] = int(n)
		g.poolPos[p.key] = r.doc.pos(p.keyOff)
	}
	return nil
}

// parseTask reads tasks[i] from r.
func parseTask(r *jsonReader, i int) (*Task, error) {
	who := "tasks[" + strconv.Itoa(i) + "]"
	start, fields, err := r.object(who)
	if err != nil {
		return nil, err
	}
	fr := fieldReader{r: r, who: who}
	t := &Task{Pos: r.doc.pos(start)}

	// The ID first, wherever it is written, so later errors can name it.
	idAt := slices.IndexFunc(fields, func(f jsonField) bool { return f.key == "id" })
	if idAt >= 0 && !isNull(fields[idAt].val) {
		f := fields[idAt]
		if t.ID, err = fr.str(f); err != nil {
			return nil, err
		}
		if t.ID == "" {
			return nil, fr.errorf(f.valOff, `field "id": must not be empty`)
		}
		fr.who, fr.task = fmt.Sprintf("task %q", t.ID), t.ID
	} else {
		return nil, fr.errorf(start, `missing "id"`)
	}

	haveCmd, haveShell := false, false
	for _, f := range fields {
		if !slices.Contains(taskFields, f.key) {
			return nil, fr.errorf(f.keyOff, "unknown field %q (want one of: %s)%s", f.key, strings.Join(taskFields, ", "), suggest(f.key, taskFields))
		}
		if isNull(f.val) {
			continue
		}
		switch f.key {
		case "id":
		case "cmd":
			haveCmd = true
			if t.Cmd, err = fr.strs(f); err != nil {
				return nil, err
			}
			if len(t.Cmd) == 0 || t.Cmd[0] == "" {
				return nil, fr.errorf(f.valOff, `field "cmd": needs a program name as its first element`)
			}
			for _, w := range t.Cmd {
				if strings.IndexByte(w, 0) >= 0 {
					return nil, fr.errorf(f.valOff, `field "cmd": an argument holds a NUL byte`)
				}
			}
		case "shell":
			haveShell = true
			if t.Shell, err = fr.str(f); err != nil {
				return nil, err
			}
			if strings.TrimSpace(t.Shell) == "" {
				return nil, fr.errorf(f.valOff, `field "shell": must not be empty`)
			}
			if strings.IndexByte(t.Shell, 0) >= 0 {
				return nil, fr.errorf(f.valOff, `field "shell": holds a NUL byte`)
			}
		case "deps":
			if t.Deps, err = fr.strs(f); err != nil {
				return nil, err
			}
		case "cpus":
			if t.CPUs, err = fr.integer(f, 1); err != nil {
				return nil, err
			}
		case "mem_mb":
			if t.MemMB, err = fr.integer(f, 0); err != nil {
				return nil, err
			}
		case "pool":
			if t.Pool, err = fr.str(f); err != nil {
				return nil, err
			}
		case "cwd":
			if t.Cwd, err = fr.str(f); err != nil {
				return nil, err
			}
		case "env":
			if t.Env, err = fr.env(f); err != nil {
				return nil, err
			}
		case "remote":
			if t.Remote, err = fr.boolean(f); err != nil {
				return nil, err
			}
		}
	}
	switch {
	case haveCmd && haveShell:
		return nil, fr.errorf(start, `has both "cmd" and "shell"; give one`)
	case !haveCmd && !haveShell:
		return nil, fr.errorf(start, `has neither "cmd" nor "shell"`)
	}
	if t.CPUs == 0 {
		t.CPUs = 1
	}
	return t, nil
}

// suggest returns `; did you mean "x"?` for the known name closest to key
// (edit distance at most 2), or "".
func suggest(key string, known []string) string {
	type cand struct {
		name string
		d    int
	}
	var cs []cand
	for _, k := range known {
		if d := editDistance(strings.ToLower(key), k); d <= 2 {
			cs = append(cs, cand{k, d})
		}
	}
	if len(cs) == 0 {
		return ""
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	return fmt.Sprintf("; did you mean %q?", cs[0].name)
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
