package bench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tinyCorpus is a hand-made project that builds in a fraction of a
// second: three small units, two archives, a link.
func tinyCorpus(t *testing.T) *Corpus {
	t.Helper()
	c := &Corpus{Name: "tiny"}
	for _, n := range []string{"a", "b", "c"} {
		c.Files = append(c.Files, CorpusFile{Path: "src/" + n + ".c", Data: []byte("int f_" + n + "(int x) { return x + 1; }\n")})
		c.Tasks = append(c.Tasks, CorpusTask{ID: "obj/" + n + ".o", Output: "obj/" + n + ".o", Compile: true,
			Args: []string{"gcc", "-O2", "-c", "src/" + n + ".c", "-o", "obj/" + n + ".o"}})
	}
	c.Files = append(c.Files, CorpusFile{Path: "src/main.c", Data: []byte("int f_a(int); int f_c(int);\nint main(void) { return f_a(-1) + f_c(-1); }\n")})
	c.Tasks = append(c.Tasks,
		CorpusTask{ID: "lib/libab.a", Output: "lib/libab.a", Deps: []string{"obj/a.o", "obj/b.o"}, Args: []string{"ar", "rcs", "lib/libab.a", "obj/a.o", "obj/b.o"}},
		CorpusTask{ID: "lib/libc.a", Output: "lib/libc.a", Deps: []string{"obj/c.o"}, Shell: "ar rcs lib/libc.a obj/c.o"},
		CorpusTask{ID: "obj/main.o", Output: "obj/main.o", Compile: true, Dir: "src", Args: []string{"gcc", "-c", "main.c", "-o", "../obj/main.o"}},
		CorpusTask{ID: "bin/app", Output: "bin/app", Deps: []string{"obj/main.o", "lib/libab.a", "lib/libc.a"},
			Args: []string{"gcc", "-o", "bin/app", "obj/main.o", "lib/libab.a", "lib/libc.a"}},
	)
	if err := c.Write(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	return c
}

func requireProgram(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s not installed (.ci/run installs it)", name)
	}
}

// TestEmitDryRun checks the generated Makefile and build.ninja with make -n
// and ninja -n: every command, each after its dependencies.
func TestEmitDryRun(t *testing.T) {
	requireProgram(t, "gcc")
	c := tinyCorpus(t)
	files, err := writeRunnerFiles(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		runner string
		args   []string
	}{
		{"make", []string{"make", "-r", "-n", "-f", files.makefile}},
		{"ninja", []string{"ninja", "-n", "-v", "-f", files.ninja}},
		{"sh", []string{"sh", "-n", files.xargs}},
	} {
		t.Run(tc.runner, func(t *testing.T) {
			requireProgram(t, tc.args[0])
			cmd := exec.Command(tc.args[0], tc.args[1:]...)
			cmd.Dir = c.Dir
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %v\n%s", tc.args, err, out)
			}
			if tc.runner == "sh" {
				return
			}
			pos := map[string]int{}
			for _, task := range c.Tasks {
				i := bytes.Index(out, []byte(task.CommandLine()))
				if i < 0 {
					t.Fatalf("%s -n does not run %q:\n%s", tc.runner, task.CommandLine(), out)
				}
				pos[task.ID] = i
				for _, d := range task.Deps {
					if pos[d] > i {
						t.Errorf("%s runs %s before its dependency %s", tc.runner, task.ID, d)
					}
				}
			}
		})
	}
}

// TestEmitGraph checks the JSON graph's tasks.
func TestEmitGraph(t *testing.T) {
	c := tinyCorpus(t)
	var b bytes.Buffer
	if err := c.WriteGraph(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"id": "bin/app"`, `"shell": "ar rcs lib/libc.a obj/c.o"`, `"cwd": "` + filepath.Join(c.Dir, "src") + `"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("graph lacks %s:\n%s", want, b.String())
		}
	}
}

// TestKernbenchTiny runs the tiny corpus through make, ninja and xargs at
// every -j level (numasteal run itself is covered by cmd/numasteal's test,
// which has the binary) and checks every row and that the build works.
func TestKernbenchTiny(t *testing.T) {
	for _, p := range []string{"gcc", "ar", "make", "xargs"} {
		requireProgram(t, p)
	}
	c := tinyCorpus(t)
	var progress []KernbenchProgress
	r, err := RunKernbench(context.Background(), KernbenchOptions{
		Corpus: c, Numasteal: "/nonexistent/numasteal", Reps: 1, CPUs: 1,
		Progress: func(p KernbenchProgress) { progress = append(progress, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.Skipped, RunnerNumasteal) {
		t.Errorf("skipped %v, want numasteal (no binary)", r.Skipped)
	}
	runners := 3
	if _, err := exec.LookPath("ninja"); err != nil {
		runners = 2
	}
	if got, want := len(r.Rows), 3*runners; got != want {
		t.Fatalf("%d rows, want %d", got, want)
	}
	if len(progress) != len(r.Rows) || progress[len(progress)-1].Run != progress[len(progress)-1].Runs {
		t.Errorf("%d progress calls, want %d ending at the last run", len(progress), len(r.Rows))
	}
	for _, row := range r.Rows {
		if row.ElapsedS <= 0 || row.UserS+row.SysS <= 0 || row.Runs != 1 {
			t.Errorf("row %+v: want positive times over 1 run", row)
		}
		if want := map[string]int{"2x": 2, "16x": 16, "max": 0}[row.Jobs]; row.J != want {
			t.Errorf("row %s %s has -j %d, want %d", row.Runner, row.Jobs, row.J, want)
		}
	}
	out, err := exec.Command(filepath.Join(c.Dir, "bin/app")).CombinedOutput()
	if err != nil {
		t.Fatalf("the built program: %v\n%s", err, out)
	}
	var tab bytes.Buffer
	WriteKernbenchTable(&tab, r)
	if !strings.Contains(tab.String(), "make       max (inf)") {
		t.Errorf("table lacks the make max row:\n%s", tab.String())
	}
	if _, err := os.Stat(filepath.Join(c.Dir, ".kernbench", "build.ninja")); err != nil {
		t.Error(err)
	}
}
