package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestUnusableRuntimeDir: a $XDG_RUNTIME_DIR that does not exist, is not
// a directory, or cannot hold numasteal's directory (/proc) is never
// created or written; the launchers fall back to $TMPDIR/numasteal-UID,
// as with no $XDG_RUNTIME_DIR, run their commands under the daemon there,
// and warn once per build (the launchers here share one: this test's
// process).
func TestUnusableRuntimeDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	missing := filepath.Join(t.TempDir(), "nonexistent")
	for _, xdg := range []string{missing, file, "/proc"} {
		e := newEnv(t, "")
		e.sock = filepath.Join(e.dir, "numasteal-"+strconv.Itoa(os.Getuid()), "sock")
		e.vars = append(e.vars, "NUMASTEAL_SOCKET=", "XDG_RUNTIME_DIR="+xdg, "TMPDIR="+e.dir)
		var out strings.Builder
		for range 3 {
			b, err := e.cmd("", e.launcher(), "true").CombinedOutput()
			if err != nil {
				t.Fatalf("XDG_RUNTIME_DIR=%s: %v\n%s", xdg, err, b)
			}
			out.Write(b)
		}
		if _, err := os.Lstat(missing); err == nil {
			t.Fatalf("XDG_RUNTIME_DIR=%s: the missing runtime directory was created", xdg)
		}
		if _, err := os.Lstat("/proc/numasteal"); err == nil {
			t.Fatalf("XDG_RUNTIME_DIR=%s: /proc/numasteal exists", xdg)
		}
		want := "numasteal-launch: warning: $XDG_RUNTIME_DIR (" + xdg + ") "
		if n := strings.Count(out.String(), want); n != 1 || strings.Count(out.String(), "\n") != 1 ||
			!strings.HasSuffix(out.String(), "; using "+filepath.Dir(e.sock)+"\n") {
			t.Errorf("XDG_RUNTIME_DIR=%s: want one warning naming it and %s, got:\n%s", xdg, filepath.Dir(e.sock), out.String())
		}
		// numasteal status finds the same daemon.
		if got := e.done(); got != "3" {
			t.Errorf("XDG_RUNTIME_DIR=%s: the daemon in the fallback directory ran %s jobs, want 3", xdg, got)
		}
	}
}

// TestRefusedSocketDir: a NUMASTEAL_SOCKET in a directory the launcher
// refuses (open to others) is not used, and nothing is created in it (no
// sock.warned): the commands run directly with one warning naming it.
func TestRefusedSocketDir(t *testing.T) {
	e := newEnv(t, "")
	open := filepath.Join(e.dir, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o777)
	e.vars = append(e.vars, "NUMASTEAL_SOCKET="+filepath.Join(open, "sock"), "TMPDIR="+e.dir)
	var out strings.Builder
	for range 3 {
		b, err := e.cmd("", e.launcher(), "true").CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		out.Write(b)
	}
	if ents, _ := os.ReadDir(open); len(ents) != 0 {
		t.Errorf("the refused directory got %v", ents)
	}
	if n := strings.Count(out.String(), "\n"); n != 1 || !strings.Contains(out.String(), open+" is open to others") {
		t.Errorf("want one warning naming %s, got:\n%s", open, out.String())
	}
}
