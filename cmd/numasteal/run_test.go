package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/internal/oomscore"
)

// writeFile writes content to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runCmd runs "numasteal run" with a history file in a temporary
// directory, and checks that no goroutine is left.
func runCmd(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	args = append([]string{"run", "--history", filepath.Join(dir, "hist")}, args...)
	return run(t, args...)
}

func TestRunCommandsFile(t *testing.T) {
	dir := t.TempDir()
	cmds := writeFile(t, dir, "cmds.txt", "# three commands\necho one\n\necho two > "+dir+"/two.txt\nsleep 0.01\n")
	code, out, errOut := runCmd(t, dir, cmds)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	for _, want := range []string{"[3/3] ok", "3 tasks: 3 succeeded", "Elapsed", "System", "User", "CPU%"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "two.txt")); string(b) != "two\n" {
		t.Errorf("two.txt = %q", b)
	}
	hist, err := os.ReadFile(filepath.Join(dir, "hist"))
	if err != nil || !strings.HasPrefix(string(hist), `{"numasteal_history":2,"runs":1}`) || strings.Count(string(hist), "\n") != 4 {
		t.Errorf("history file %q, err %v", hist, err)
	}
}

// A failed task: exit status 1, its output shown, its dependents skipped;
// -k runs the independent rest.
func TestRunFailureAndKeepGoing(t *testing.T) {
	dir := t.TempDir()
	graph := writeFile(t, dir, "g.json", `{"tasks": [
		{"id": "bad", "shell": "echo partial; echo oops >&2; exit 3"},
		{"id": "after", "shell": "touch after", "deps": ["bad"], "cwd": "`+dir+`"},
		{"id": "other", "shell": "touch other", "cwd": "`+dir+`"}
	]}`)
	for _, k := range []bool{false, true} {
		args := []string{"-j", "1", graph}
		if k {
			args = append([]string{"-k"}, args...)
		}
		code, out, errOut := runCmd(t, dir, args...)
		if code != exitFail {
			t.Fatalf("-k=%v: exit %d, want 1", k, code)
		}
		for _, want := range []string{"FAILED: bad: /bin/sh: exit status 3", "(" + graph + ":2:", "partial", "oops"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("-k=%v: stderr lacks %q:\n%s", k, want, errOut)
			}
		}
		if !strings.Contains(out, "1 skipped") {
			t.Errorf("-k=%v: summary lacks the skipped task:\n%s", k, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "after")); err == nil {
			t.Errorf("-k=%v: the dependent of a failure ran", k)
		}
		_, err := os.Stat(filepath.Join(dir, "other"))
		if k != (err == nil) {
			t.Errorf("-k=%v: independent task ran: %v", k, err == nil)
		}
	}
}

// Bad input exits 2 with the place named, and nothing runs.
func TestRunBadInput(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	touch := `"shell": "touch ` + marker + `"`
	tests := []struct {
		name, file, content, want string
	}{
		{"missing file", "absent.json", "", "absent.json: no such file"},
		{"malformed JSON", "bad.json", `{"tasks": [{"id": "a", ` + touch + `},]}`, "bad.json:1:"},
		{"cycle", "cycle.json", `{"tasks": [{"id": "a", ` + touch + `, "deps": ["b"]}, {"id": "b", "shell": "true", "deps": ["a"]}]}`, "cycle: a -> b -> a"},
		{"unknown dependency", "dep.json", `{"tasks": [{"id": "a", ` + touch + `, "deps": ["nope"]}]}`, `unknown task "nope"`},
		{"missing program", "prog.json", `{"tasks": [{"id": "a", ` + touch + `}, {"id": "b", "cmd": ["numasteal-no-such-cc", "-c"]}]}`, `program "numasteal-no-such-cc" not found`},
		{"too big for -j", "big.json", `{"tasks": [{"id": "a", ` + touch + `, "cpus": 64}]}`, "more than the"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			if tc.content != "" {
				writeFile(t, dir, tc.file, tc.content)
			}
			code, _, errOut := runCmd(t, dir, "-j", "2", path)
			if code != exitUsage {
				t.Fatalf("exit %d, want 2; stderr %s", code, errOut)
			}
			if !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, tc.file) {
				t.Errorf("stderr %q lacks %q or the file name", errOut, tc.want)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("a task ran despite bad input")
			}
		})
	}
}

func TestRunBadFlags(t *testing.T) {
	dir := t.TempDir()
	cmds := writeFile(t, dir, "c.txt", "true\n")
	for _, args := range [][]string{
		{"--policy", "bogus", cmds},
		{"-j", "-3", cmds},
		{"--pin", "socket", cmds},
		{"--progress", "fancy", cmds},
		{cmds, cmds},
		{},
	} {
		if code, _, _ := runCmd(t, dir, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	for _, p := range balance.Names() {
		if code, _, errOut := runCmd(t, dir, "--policy", p, cmds); code != exitOK {
			t.Errorf("--policy %s: exit %d %s", p, code, errOut)
		}
	}
}

// -j 0 admits everything and still completes; the trace has one complete
// event per task on a slot track, with its command.
func TestRunUnlimitedAdmissionAndTrace(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for range 24 {
		b.WriteString("sleep 0.01\n")
	}
	cmds := writeFile(t, dir, "c.txt", b.String())
	trace := filepath.Join(dir, "trace.json")
	code, out, errOut := runCmd(t, dir, "-j", "0", "--trace", trace, "--progress", "none", cmds)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(out, "[1/24]") || !strings.Contains(out, "24 tasks: 24 succeeded") {
		t.Errorf("stdout:\n%s", out)
	}
	doc := readTrace(t, trace)
	spans, tracks := 0, map[int]string{}
	for _, ev := range doc.TraceEvents {
		switch {
		case ev.Ph == "X":
			spans++
			if ev.Args["cmd"] != "sleep 0.01" {
				t.Errorf("span %q cmd %v", ev.Name, ev.Args["cmd"])
			}
		case ev.Ph == "M" && ev.Name == "thread_name":
			tracks[ev.Tid], _ = ev.Args["name"].(string)
		}
	}
	if spans != 24 || len(tracks) == 0 || !strings.HasPrefix(tracks[firstKey(tracks)], "slot ") {
		t.Errorf("%d spans, tracks %v", spans, tracks)
	}
}

func firstKey(m map[int]string) int {
	k := -1
	for id := range m {
		if k < 0 || id < k {
			k = id
		}
	}
	return k
}

// A compilation database compiles with the C compiler.
func TestRunCompilationDatabase(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.c", "int a(void) { return 1; }\n")
	writeFile(t, dir, "b.c", "int b(void) { return 2; }\n")
	db := writeFile(t, dir, "compile_commands.json", `[
		{"directory": "`+dir+`", "file": "a.c", "output": "a.o", "arguments": ["cc", "-c", "a.c", "-o", "a.o"]},
		{"directory": "`+dir+`", "file": "b.c", "command": "cc -c b.c -o b.o"}
	]`)
	code, out, errOut := runCmd(t, dir, db)
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	for _, o := range []string{"a.o", "b.o"} {
		if _, err := os.Stat(filepath.Join(dir, o)); err != nil {
			t.Error(err)
		}
	}
}

// An interrupted run kills its processes and exits 1.
func TestRunInterrupted(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	cmds := writeFile(t, dir, "c.txt", "sleep 30\nsleep 30\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb strings.Builder
	code := dispatch(ctx, []string{"run", "--history", "", cmds}, &out, &errb)
	if code != exitFail || !strings.Contains(errb.String(), "interrupted") || !strings.Contains(out.String(), "2 canceled") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
	}
}

// traceDoc is the part of a Chrome trace the tests read.
type traceDoc struct {
	TraceEvents []struct {
		Ph   string         `json:"ph"`
		Tid  int            `json:"tid"`
		Name string         `json:"name"`
		Ts   float64        `json:"ts"`
		Dur  float64        `json:"dur"`
		Args map[string]any `json:"args"`
	} `json:"traceEvents"`
}

// readTrace reads and parses the trace file at path.
func readTrace(t *testing.T, path string) traceDoc {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc traceDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("trace: %v", err)
	}
	return doc
}

// A task's processes have oom_score_adj oomscore.Task (or this process's,
// when higher), so that the OOM killer takes them before numasteal. The
// value is written right after the fork, as the task's program starts, so
// the test looks from outside until it is there.
func TestRunTasksOOMScore(t *testing.T) {
	own, err := oomscore.Get(0)
	if err != nil {
		t.Skip("SKIP: ", err)
	}
	want := max(own, oomscore.Task)
	dir := t.TempDir()
	pidFile, done := filepath.Join(dir, "pid"), filepath.Join(dir, "done")
	cmds := writeFile(t, dir, "cmds.txt", fmt.Sprintf(
		"echo $$ > %[1]s.tmp && mv %[1]s.tmp %[1]s && while [ ! -e %[2]s ]; do sleep 0.01; done\n", pidFile, done))
	type result struct {
		code   int
		errOut string
	}
	res := make(chan result, 1)
	go func() {
		code, _, errOut := runCmd(t, dir, cmds)
		res <- result{code, errOut}
	}()
	got, pid := 0, 0
	for deadline := time.Now().Add(time.Minute); got != want && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if pid == 0 {
			b, _ := os.ReadFile(pidFile)
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if pid != 0 {
			got, _ = oomscore.Get(pid)
		}
	}
	os.WriteFile(done, nil, 0o644)
	if r := <-res; r.code != exitOK {
		t.Fatalf("exit %d, stderr %s", r.code, r.errOut)
	}
	if got != want {
		t.Errorf("the task's oom_score_adj is %d, want %d", got, want)
	}
	if got, _ := oomscore.Get(0); got != own {
		t.Errorf("numasteal's own oom_score_adj changed from %d to %d", own, got)
	}
}
