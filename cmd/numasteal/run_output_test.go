package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The output of each task that succeeded appears once, whole, right after
// its status line, so in the order the tasks ended, at -j 3 and at -j 0;
// --quiet shows none.
func TestRunPrintsOutputOfSucceededTasks(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for i := range 6 {
		// Ten lines each, written one at a time with pauses, while the
		// other tasks write theirs: they must not mix.
		lines = append(lines, fmt.Sprintf("for n in 0 1 2 3 4 5 6 7 8 9; do echo task%d-$n; sleep 0.0%d; done", i, i%3))
	}
	lines = append(lines, "true") // prints nothing: no block
	cmds := writeFile(t, dir, "c.txt", strings.Join(lines, "\n")+"\n")
	for _, jobs := range []string{"-j3", "-j0"} { // -j0: every task admitted at once
		code, out, errOut := runCmd(t, dir, jobs, "--progress=lines", cmds)
		if code != exitOK {
			t.Fatalf("%s: exit %d, stderr %s", jobs, code, errOut)
		}
		status := regexp.MustCompile(`^\[(\d+)/7\] ok line (\d+) `)
		got := strings.Split(out, "\n")
		var order []int
		for i := 0; i < len(got); i++ {
			m := status.FindStringSubmatch(got[i])
			if m == nil {
				continue
			}
			var line int
			fmt.Sscan(m[2], &line)
			order = append(order, line)
			if line == 7 {
				continue
			}
			for n := range 10 {
				want := fmt.Sprintf("task%d-%d", line-1, n)
				if i+1+n >= len(got) || got[i+1+n] != want {
					t.Fatalf("%s: after %q, line %d is not %q:\n%s", jobs, got[i], n+1, want, out)
				}
			}
		}
		if len(order) != 7 {
			t.Fatalf("%s: %d status lines, want 7:\n%s", jobs, len(order), out)
		}
		for i := range 6 {
			if c := strings.Count(out, fmt.Sprintf("task%d-", i)); c != 10 {
				t.Errorf("%s: task%d: %d lines of output, want 10 (once each)", jobs, i, c)
			}
		}
	}

	code, out, _ := runCmd(t, dir, "-j3", "--progress=lines", "--quiet", cmds)
	if code != exitOK || strings.Contains(out, "task0-") {
		t.Errorf("--quiet: exit %d, output shown:\n%s", code, out)
	}
}

// A stream larger than the capture limit is printed whole, from its spill
// file, and no file is left in the spill directory.
func TestRunOutputPastTheLimit(t *testing.T) {
	dir := t.TempDir()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the spill files go
	size := 64<<10 + 1000   // past proc.DefaultOutputLimit
	cmds := writeFile(t, dir, "c.txt", fmt.Sprintf("head -c %d /dev/zero | tr '\\0' x; echo small >&2\n", size))
	code, out, errOut := runCmd(t, dir, "--progress=none", cmds)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	// The summary follows the task's output.
	if want := strings.Repeat("x", size) + "\nsmall\n"; !strings.HasPrefix(out, want) || strings.Contains(out[len(want):], "x") {
		t.Errorf("output of %d bytes does not start with the whole %d-byte stdout, a newline and stderr's line", len(out), size)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("%d files left in the spill directory, want none", len(ents))
	}
}

// -n prints the commands in the order they would start and runs none;
// -j8, -j 8 and --jobs=8 parse alike.
func TestRunDryRun(t *testing.T) {
	dir := t.TempDir()
	made := filepath.Join(dir, "made")
	graph := writeFile(t, dir, "g.json", `{"tasks": [
		{"id": "link", "shell": "touch `+made+`.link", "deps": ["a", "b"]},
		{"id": "a", "shell": "touch `+made+`.a"},
		{"id": "b", "cmd": ["touch", "`+made+`.b"], "cwd": "`+dir+`"}
	]}`)
	var first string
	for _, jobs := range [][]string{{"-j8"}, {"-j", "8"}, {"--jobs=8"}, {"--jobs", "8"}} {
		args := append(append([]string{"-n"}, jobs...), graph)
		code, out, errOut := runCmd(t, dir, args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d, stderr %s", args, code, errOut)
		}
		want := "touch " + made + ".a\ncd " + dir + " && touch " + made + ".b\ntouch " + made + ".link\n"
		if out != want {
			t.Errorf("%v: stdout\n%s\nwant\n%s", args, out, want)
		}
		if first == "" {
			first = out
		} else if out != first {
			t.Errorf("%v: output differs from %v's", args, jobs)
		}
	}
	if ents, _ := filepath.Glob(made + "*"); len(ents) != 0 {
		t.Errorf("a dry run ran commands: %v", ents)
	}
	// One slot: the order is still the scheduler's, a and b before link.
	code, out, _ := runCmd(t, dir, "--dry-run", "-j1", graph)
	if code != exitOK || !strings.HasSuffix(out, ".link\n") {
		t.Errorf("-j1: exit %d:\n%s", code, out)
	}
}

// -v prints each command as it starts; -C changes directory first.
func TestRunVerboseAndDirectory(t *testing.T) {
	dir := t.TempDir()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(wd) // restored after the -C below
	writeFile(t, dir, "c.txt", "echo hello > out.txt\n")
	code, out, errOut := runCmd(t, dir, "-v", "-C", dir, "--progress=none", "c.txt")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	if !strings.HasPrefix(out, "echo hello > out.txt\n") {
		t.Errorf("-v: stdout does not start with the command:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(b) != "hello\n" {
		t.Errorf("-C: out.txt = %q, %v", b, err)
	}
	if code, _, errOut := runCmd(t, dir, "-C", filepath.Join(dir, "nonexistent"), "c.txt"); code != exitFail || !strings.Contains(errOut, "-C") {
		t.Errorf("-C to a missing directory: exit %d, %s", code, errOut)
	}
}

// -n with -C DIR (here relative) prints a script that runs from any
// directory: every line starts with "cd /abs/DIR && ", a task's relative
// cwd under DIR.
func TestRunDryRunDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "g.json", `{"tasks": [
		{"id": "top", "shell": "echo top > top.txt"},
		{"id": "sub", "shell": "echo sub > sub.txt", "cwd": "sub", "deps": ["top"]}
	]}`)
	t.Chdir(filepath.Dir(dir))
	code, out, errOut := runCmd(t, dir, "-n", "-C", filepath.Base(dir), "g.json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	want := "cd " + dir + " && echo top > top.txt\ncd " + filepath.Join(dir, "sub") + " && echo sub > sub.txt\n"
	if out != want {
		t.Errorf("stdout\n%s\nwant\n%s", out, want)
	}
	sh := exec.Command("/bin/sh", "-e")
	sh.Stdin = strings.NewReader(out)
	sh.Dir = t.TempDir()
	if b, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("the script from another directory: %v\n%s", err, b)
	}
	for name, content := range map[string]string{"top.txt": "top\n", "sub/sub.txt": "sub\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != content {
			t.Errorf("%s = %q, %v", name, b, err)
		}
	}
}

// -C DIR with a relative FILE that does not exist: the one line of the
// message names the file under DIR, not the bare name.
func TestRunDirectoryMissingFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(t.TempDir())
	code, out, errOut := runCmd(t, dir, "-C", dir, "c20.txt")
	want := "numasteal run: open " + filepath.Join(dir, "c20.txt") + ": no such file or directory\n"
	if code != exitUsage || errOut != want || out != "" {
		t.Errorf("exit %d, stderr %q, want 2 and %q; stdout %q", code, errOut, want, out)
	}
}
