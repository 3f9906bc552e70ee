package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestNoSuchProgram: a command that cannot run is one line naming it,
// exit 127, handed off or measured, without Go's "fork/exec".
func TestNoSuchProgram(t *testing.T) {
	e := newEnv(t, "")
	noexec := filepath.Join(e.dir, "noexec")
	os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644)
	for _, tc := range []struct{ prog, why string }{
		{"/nonexistent/nosuchcc", "no such file or directory"},
		{noexec, "permission denied"},
	} {
		for _, measure := range []string{"0", "1"} {
			c := e.cmd("", e.launcher(), tc.prog, "-c", "x.c", "-o", filepath.Join(e.dir, "x.o"))
			c.Env = append(c.Env, "NUMASTEAL_MEASURE="+measure)
			out, err := c.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 127 {
				t.Errorf("%s (measure %s): %v, want exit 127", tc.prog, measure, err)
			}
			if want := "numasteal-launch: " + tc.prog + ": " + tc.why + "\n"; string(out) != want {
				t.Errorf("%s (measure %s): %q, want %q", tc.prog, measure, out, want)
			}
		}
	}
}

// TestServeRunning: numasteal serve with a daemon running names its pid
// and socket.
func TestServeRunning(t *testing.T) {
	e := newEnv(t, "")
	run(t, e.cmd("", e.launcher(), "true"))
	out, err := e.cmd("", filepath.Join(binDir, "numasteal"), "serve").CombinedOutput()
	want := "numasteal serve: a numasteal daemon is already running on " + e.sock + " (pid " + strconv.Itoa(e.daemonPID()) + ")\n"
	if err != nil || string(out) != want {
		t.Errorf("numasteal serve: %v %q, want %q", err, out, want)
	}
}

// asUser makes c run as uid 65534 (nobody).
func asUser(c *exec.Cmd) *exec.Cmd {
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	return c
}

// TestOtherUserMessages: another user's daemon is named as such, with its
// socket and uid, both ways: nobody asking root's daemon (which it cannot
// reach), root asking nobody's (which refuses it); and nobody's launcher
// pointed at root's directory says whose it is, once.
func TestOtherUserMessages(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run commands as another user (uid 65534)")
	}
	os.Chmod(binDir, 0o755) // for nobody
	e := newEnv(t, "")
	run(t, e.cmd("", e.launcher(), "true"))
	out, err := asUser(e.cmd("/", filepath.Join(binDir, "numasteal"), "status")).CombinedOutput()
	if want := "numasteal status: the numasteal daemon on " + e.sock + " belongs to another user (uid 0)\n"; err == nil || string(out) != want {
		t.Errorf("status as nobody: %v %q, want %q", err, out, want)
	}

	tmp, err := os.MkdirTemp("", "nsu-") // t.TempDir's parent is closed to nobody
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	os.Chmod(tmp, 0o1777)
	c := asUser(e.cmd("/", e.launcher(), "true"))
	c.Env = append(c.Env, "TMPDIR="+tmp)
	out, err = c.CombinedOutput()
	if want := "numasteal-launch: warning: running commands of this build directly, without the daemon's slots: " +
		e.dir + " belongs to another user (uid 0, not 65534)\n"; err != nil || string(out) != want {
		t.Errorf("launcher as nobody: %v %q, want %q", err, out, want)
	}

	dir := filepath.Join(tmp, "nobody")
	os.Mkdir(dir, 0o700)
	os.Chown(dir, 65534, 65534)
	sock := filepath.Join(dir, "sock")
	serve := asUser(exec.Command(filepath.Join(binDir, "numasteal"), "serve", "--slots", "1", "--idle", "60s"))
	serve.Dir = "/"
	serve.Env = append(os.Environ(), "NUMASTEAL_SOCKET="+sock)
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { serve.Process.Kill(); serve.Wait() }()
	poll(t, "nobody's daemon to listen", func() bool { _, err := os.Stat(sock); return err == nil })
	st := exec.Command(filepath.Join(binDir, "numasteal"), "status")
	st.Env = append(os.Environ(), "NUMASTEAL_SOCKET="+sock)
	out, err = st.CombinedOutput()
	if want := "numasteal status: the numasteal daemon on " + sock + " belongs to another user (uid 65534)\n"; err == nil || string(out) != want {
		t.Errorf("status of nobody's daemon as root: %v %q, want %q", err, out, want)
	}
	if strings.Contains(string(out), "%20") {
		t.Errorf("protocol text in a message: %q", out)
	}
}
