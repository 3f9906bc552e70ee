package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numasteal/numasteal/topology"
)

// TestRunCheckBadInput: each bad input gives exit 2 and its exact error before
// anything runs: every workload would create a marker file.
func TestRunCheckBadInput(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	touch := "touch " + marker
	cmds := writeFile(t, dir, "w.txt", touch+"\n")
	fifo := filepath.Join(dir, "w.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sparse := filepath.Join(dir, "sparse.json")
	os.WriteFile(sparse, nil, 0o644)
	os.Truncate(sparse, 2<<30)
	big := writeFile(t, dir, "big.json", `{"tasks":[{"id":"a","shell":"`+touch+`","cpus":4096}]}`)
	fatJSON := `{"tasks":[{"id":"a","shell":"` + touch + `"},{"id":"b","shell":"` + touch + `","mem_mb":900}]}`
	fat := writeFile(t, dir, "fat.json", fatJSON)
	fatCol := strconv.Itoa(strings.Index(fatJSON, `{"id":"b"`) + 1) // the temporary directory's name varies in length
	cwd := writeFile(t, dir, "cwd.json", `{"tasks":[
 {"id":"a","shell":"`+touch+`"},
 {"id":"b","shell":"true","cwd":"`+dir+`/nodir"},
 {"id":"c","shell":"true","cwd":"`+dir+`/nodir"},
 {"id":"d","shell":"true","cwd":"`+cmds+`"}]}`)
	compdb := writeFile(t, dir, "compile_commands.json", `[{"directory":"`+dir+`/gone","file":"a.c","arguments":["touch","`+marker+`"]}]`)
	nul := writeFile(t, dir, "nul.json", `{"tasks":[{"id":"a\u0000b","shell":"`+touch+`"}]}`)
	null := writeFile(t, dir, "null.json", `{"tasks":null}`)
	binary := writeFile(t, dir, "bin.sh", touch+"\n\x7fELF\x02\x01\n")
	notHist := writeFile(t, dir, "notes", "my notes\n")
	hist := filepath.Join(dir, "hist")
	tests := []struct {
		args []string
		err  string
	}{
		{[]string{"-j", "-1", cmds}, "-j -1: want 0 or more (leave -j out for one slot per usable CPU)"},
		{[]string{"--timeout", "-5s", cmds}, "--timeout -5s: want 0 (no limit) or more"},
		{[]string{"--mem", "-5", cmds}, "--mem -5: want 0 (no limit) or more MB"},
		{[]string{"--format", "yaml", cmds}, `--format: buildgraph: unknown format "yaml" (want one of: auto, graph, compdb, commands)`},
		{[]string{fifo}, "read " + fifo + ": not a regular file (a named pipe); numasteal reads only regular files"},
		{[]string{"--format", "commands", fifo}, "read " + fifo + ": not a regular file (a named pipe); numasteal reads only regular files"},
		{[]string{"/dev/zero"}, "read /dev/zero: not a regular file (a character device); numasteal reads only regular files"},
		{[]string{sparse}, "read " + sparse + ": file too large: 2048 MiB, more than the limit of 256 MiB"},
		{[]string{"--trace", cmds, cmds}, "--trace " + cmds + ": is the workload " + cmds + "; writing it would destroy the workload"},
		{[]string{"--trace", hist, cmds}, "--history " + hist + ": is also --trace; give them different files"},
		{[]string{"--trace", dir + "/none/t.json", cmds}, "--trace " + dir + "/none/t.json: directory " + dir + "/none: no such file or directory"},
		{[]string{"--trace", dir, cmds}, "--trace " + dir + ": is a directory"},
		{[]string{"--trace", "/dev/null", cmds}, "--trace /dev/null: exists and is not a regular file (a character device); numasteal replaces the file it writes, by rename"},
		{[]string{"-j", "0", big}, big + `:1:11: task "a" needs 4096 CPU slots, more than the ` + itoaCPUs() + ` available`},
		{[]string{"-j", "0", "--mem", "500", fat}, fat + `:1:` + fatCol + `: task "b" needs 900 MB of memory, more than the 500 MB limit`},
		{[]string{cwd}, cwd + `:3:2: task "b": working directory "` + dir + `/nodir": no such file or directory (and 1 other tasks)` + "\n" +
			cwd + `:5:2: task "d": working directory "` + cmds + `": not a directory`},
		{[]string{compdb}, compdb + `:1:2: task "a.c": working directory "` + dir + `/gone": no such file or directory`},
		{[]string{nul}, nul + `:1:11: tasks[0]: the task id "a\x00b" holds the control character U+0000 at byte 1`},
		{[]string{null}, null + `:1:10: field "tasks": want an array of tasks, got null (write [] for no tasks)`},
		{[]string{binary}, binary + `:2:1: the control character 0x7f; a command file must be text (is this a binary file?)`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var code int
			var errOut string
			within(t, 10*time.Second, func() { code, _, errOut = runCmd(t, dir, tt.args...) })
			if want := "numasteal run: " + tt.err + "\n"; code != exitUsage || errOut != want {
				t.Errorf("exit %d, stderr\n%s\nwant exit 2, stderr\n%s", code, errOut, want)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("a task ran")
				os.Remove(marker)
			}
		})
	}
	// --history naming a file that is not a history: refused, not replaced.
	code, _, errOut := run(t, "run", "--history", notHist, cmds)
	want := "numasteal run: --history " + notHist + ": " + notHist + `:1: history: not a numasteal history file (want the header {"numasteal_history":1} or {"numasteal_history":2,"runs":N}); refusing to replace it (remove it or name another file)` + "\n"
	if code != exitUsage || errOut != want {
		t.Errorf("not a history: exit %d, stderr\n%s\nwant\n%s", code, errOut, want)
	}
	if b, _ := os.ReadFile(notHist); string(b) != "my notes\n" {
		t.Errorf("the file named by --history was changed: %q", b)
	}
}

// itoaCPUs is the usable CPU count the -j 0 check compares with.
func itoaCPUs() string {
	topo, err := topology.Discover()
	if err != nil {
		return "?"
	}
	return strconv.Itoa(topo.Usable.Len())
}

// within fails the test if f has not returned after d: the bugs were hangs.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still blocked after %v", d)
	}
}

// A history with bad lines (one of them a 2 MiB id, longer than any line
// the reader accepts) is reported and ignored: the run goes on, and saves
// a clean history.
func TestRunCorruptHistory(t *testing.T) {
	dir := t.TempDir()
	cmds := writeFile(t, dir, "w.txt", "true\n")
	hist := filepath.Join(dir, "hist")
	os.WriteFile(hist, []byte(`{"numasteal_history":2,"runs":0}`+"\n"+`{"id":"`+strings.Repeat("x", 2<<20)+`","hash":"1","ms":[1]}`+"\n"), 0o644)
	for run := range 2 {
		code, _, errOut := runCmd(t, dir, cmds)
		if code != exitOK {
			t.Fatalf("run %d: exit %d: %s", run, code, errOut)
		}
		want := "numasteal run: warning: " + hist + ":2: history: line longer than 1048576 bytes; skipped\n" +
			"numasteal run: warning: --history " + hist + ": the lines above are ignored, and dropped when the history is saved\n"
		if run == 1 {
			want = ""
		}
		if errOut != want {
			t.Errorf("run %d: stderr\n%s\nwant\n%s", run, errOut, want)
		}
	}
}

// A link planted at the history path: the run replaces the link and
// leaves the file it pointed to untouched.
func TestRunHistoryPlantedLink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious")
	const precious = `{"numasteal_history":2,"runs":0}` + "\n" // a target that reads as a history
	os.WriteFile(outside, []byte(precious), 0o600)
	cmds := writeFile(t, dir, "w.txt", "true\n")
	if err := os.Symlink(outside, filepath.Join(dir, "hist")); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCmd(t, dir, cmds); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(outside); string(b) != precious {
		t.Errorf("the link's target now holds %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "hist")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("history %v, %v; want a regular file in place of the link", fi, err)
	}
}
