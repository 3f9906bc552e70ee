package launch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// writeStat writes a /proc/PID/stat line for pid under proc.
func writeStat(t *testing.T, proc string, pid int, comm string, ppid int, start int) {
	t.Helper()
	dir := filepath.Join(proc, fmt.Sprint(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Fields 3..22: state, ppid, then 17 fields, starttime last.
	line := fmt.Sprintf("%d (%s) S %d 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", pid, comm, ppid, start)
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBuildsOutermostTool: the build is the outermost build tool above
// the launcher (make under ninja under make is the outer make), else the
// parent; a parent's answer is cached by its pid and start time.
func TestBuildsOutermostTool(t *testing.T) {
	proc := t.TempDir()
	writeStat(t, proc, 2, "bash", 1, 100)
	writeStat(t, proc, 5, "make", 2, 200)
	writeStat(t, proc, 7, "ninja", 5, 300)
	writeStat(t, proc, 10, "make", 7, 400)
	writeStat(t, proc, 20, "numasteal-launc", 10, 500)
	writeStat(t, proc, 30, "sh (x)", 2, 600)
	writeStat(t, proc, 31, "numasteal-launc", 30, 700)
	b := NewBuilds(proc)
	if got, want := b.Of(20), "make-5-200"; got != want {
		t.Errorf("under make/ninja/make: %q, want %q", got, want)
	}
	if got, want := b.Of(31), "sh__x_-30-600"; got != want {
		t.Errorf("no build tool: %q, want the parent %q", got, want)
	}
	// The tree above a known parent is not read again.
	writeStat(t, proc, 7, "ninja", 2, 300)
	if got, want := b.Of(20), "make-5-200"; got != want {
		t.Errorf("cached: %q, want %q", got, want)
	}
	// A new process with the parent's pid (another start time) is a new
	// parent.
	writeStat(t, proc, 10, "cc", 2, 900)
	if got, want := b.Of(20), "cc-10-900"; got != want {
		t.Errorf("reused parent pid: %q, want %q", got, want)
	}
	if got := b.Of(99); got != "" {
		t.Errorf("a pid with no stat: %q, want \"\"", got)
	}
}

// TestBuildProcess: a build named by Builds after a build tool is its
// process while that pid has that start time; another form of name, or
// a parent that is no build tool, is no process.
func TestBuildProcess(t *testing.T) {
	proc := t.TempDir()
	writeStat(t, proc, 5, "make", 2, 200)
	for _, tc := range []struct {
		id       string
		ok, gone bool
	}{
		{"make-5-200", true, false},
		{"make-5-201", true, true}, // the pid is another process's now
		{"make-6-200", true, true}, // no such pid
		{"ninja-5-200", true, false},
		{"sh__x_-5-200", false, false}, // the parent, no build tool
		{"mybuild", false, false},
		{"release-2", false, false},
		{"a-b-c", false, false},
	} {
		_, ok, gone := BuildProcess(proc, tc.id)
		if ok != tc.ok || gone != tc.gone {
			t.Errorf("%s: ok %v gone %v, want %v %v", tc.id, ok, gone, tc.ok, tc.gone)
		}
	}
}

// TestBuildsOfParent: with the parent's pid from the launcher the build
// is Of's; on the live /proc a parent's answer is kept with a pidfd while
// it lives, and a parent that has ended names no build.
func TestBuildsOfParent(t *testing.T) {
	proc := t.TempDir()
	writeStat(t, proc, 5, "make", 2, 200)
	writeStat(t, proc, 10, "sh", 5, 400)
	writeStat(t, proc, 20, "numasteal-launc", 10, 500)
	b := NewBuilds(proc)
	if got, want := b.OfParent(10), b.Of(20); got != want || got != "make-5-200" {
		t.Errorf("OfParent %q, Of %q; want make-5-200", got, want)
	}
	if got := b.OfParent(1); got != "" {
		t.Errorf("parent init: %q, want \"\"", got)
	}

	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	live := NewBuilds("/proc")
	defer live.Close()
	if got, want := live.OfParent(os.Getppid()), live.Of(os.Getpid()); got != want || got == "" {
		t.Errorf("this test's parent: OfParent %q, Of %q", got, want)
	}
	parent := exec.Command("sleep", "60")
	if err := parent.Start(); err != nil {
		t.Skipf("sleep: %v", err)
	}
	id := live.OfParent(parent.Process.Pid)
	if id == "" || id != live.OfParent(parent.Process.Pid) {
		t.Fatalf("a live parent: %q, then another answer", id)
	}
	parent.Process.Kill()
	parent.Wait()
	if got := live.OfParent(parent.Process.Pid); got != "" {
		t.Errorf("a parent that has ended: %q, want \"\"", got)
	}
}
