package buildgraph

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestCheckPrograms(t *testing.T) {
	bin := t.TempDir()
	other := t.TempDir()
	for _, f := range []struct {
		dir, name string
		mode      os.FileMode
	}{{bin, "cc", 0o755}, {bin, "notexec", 0o644}, {other, "special", 0o755}} {
		if err := os.WriteFile(filepath.Join(f.dir, f.name), []byte("#!/bin/sh\n"), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	abs := filepath.Join(bin, "cc")
	g := &Graph{Tasks: []*Task{
		{ID: "a", Cmd: []string{"cc", "-c", "a.c"}},
		{ID: "b", Cmd: []string{"ccx", "-c", "b.c"}, Pos: Pos{"build.json", 4, 5}},
		{ID: "c", Cmd: []string{"ccx", "-c", "c.c"}},
		{ID: "d", Cmd: []string{"ccx", "-c", "d.c"}},
		{ID: "e", Cmd: []string{"notexec"}},
		{ID: "f", Cmd: []string{abs}},
		{ID: "g", Cmd: []string{"/no/such/ld"}},
		{ID: "h", Cmd: []string{"./gen"}},                                          // built by a dependency, maybe
		{ID: "i", Shell: "nosuchprogram"},                                          // the shell's business
		{ID: "j", Cmd: []string{"special"}, Env: map[string]string{"PATH": other}}, // the task's own PATH
		{ID: "k", Cmd: []string{"special"}},
	}}
	err := g.CheckPrograms(bin + string(filepath.ListSeparator) + "/nonexistent")
	want := `build.json:4:5: task "b": program "ccx" not found in $PATH (and 2 other tasks)
task "e": program "notexec" not found in $PATH
task "g": program "/no/such/ld" not found or not executable
task "k": program "special" not found in $PATH`
	if err == nil || err.Error() != want {
		t.Errorf("CheckPrograms =\n%v\nwant\n%s", err, want)
	}
	if !errors.Is(err, ErrNoProgram) {
		t.Error("not ErrNoProgram")
	}
	if err := (&Graph{Tasks: g.Tasks[:1]}).CheckPrograms(bin); err != nil {
		t.Errorf("CheckPrograms(ok) = %v", err)
	}
}
