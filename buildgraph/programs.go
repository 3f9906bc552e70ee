package buildgraph

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CheckPrograms looks up the program of every Cmd task before anything
// runs, so that a typo fails the whole workload at once (exit status 2)
// instead of after an hour of building. pathList is the PATH to search
// (os.Getenv("PATH")); a task whose Env sets PATH searches that instead.
//
// Only bare names ("cc") and absolute paths are checked. A relative path
// with a slash ("./gen") may be built by a dependency, and Shell tasks are
// resolved by the shell; those fail, if they do, as their task's failure.
//
// Each missing program is reported once, as an *Error wrapping ErrNoProgram
// at the first task that uses it, with the number of others.
func (g *Graph) CheckPrograms(pathList string) error {
	type miss struct {
		first  *Task
		others int
	}
	found := map[string]bool{} // "PATH\x00name" → found
	var order []string
	missing := map[string]*miss{}
	for _, t := range g.Tasks {
		if len(t.Cmd) == 0 {
			continue
		}
		prog := t.Cmd[0]
		if strings.ContainsRune(prog, '/') && !filepath.IsAbs(prog) {
			continue
		}
		search := pathList
		if p, ok := t.Env["PATH"]; ok {
			search = p
		}
		key := search + "\x00" + prog
		ok, seen := found[key]
		if !seen {
			ok = lookProgram(prog, search)
			found[key] = ok
		}
		if ok {
			continue
		}
		if m := missing[prog]; m != nil {
			m.others++
			continue
		}
		missing[prog] = &miss{first: t}
		order = append(order, prog)
	}
	v := validator{g: g}
	for _, prog := range order {
		m := missing[prog]
		where := "in $PATH"
		if filepath.IsAbs(prog) {
			where = "or not executable"
		}
		others := ""
		switch m.others {
		case 0:
		case 1:
			others = " (and 1 other task)"
		default:
			others = fmt.Sprintf(" (and %d other tasks)", m.others)
		}
		v.add(m.first.Pos, m.first.ID, ErrNoProgram, "task %q: program %q not found %s%s", m.first.ID, prog, where, others)
	}
	return v.result()
}

// lookProgram reports whether prog (a bare name or an absolute path) names
// an executable regular file, searching pathList for a bare name the way
// exec.LookPath does (an empty entry is the current directory).
func lookProgram(prog, pathList string) bool {
	if filepath.IsAbs(prog) {
		return isExecutable(prog)
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			dir = "."
		}
		if isExecutable(filepath.Join(dir, prog)) {
			return true
		}
	}
	return false
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
