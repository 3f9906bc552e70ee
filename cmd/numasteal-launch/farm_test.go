package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/numasteal/numasteal/internal/distcctest"
	"github.com/numasteal/numasteal/launch/daemon"
)

// farmEnv returns a daemon env with one local slot and the farm host
// spec (numasteal serve --farm).
func farmEnv(t *testing.T, shared string, spec string) *env {
	e := newEnv(t, "--slots 1 --farm "+spec)
	e.vars = append(e.vars, distcctest.ClientEnv(shared)...)
	return e
}

// hosts returns the daemon's farm hosts, from numasteal status --json.
func (e *env) hosts() []daemon.HostStatus {
	var st daemon.Status
	if err := json.Unmarshal([]byte(e.statusJSON()), &st); err != nil {
		e.t.Fatalf("numasteal status --json: %v", err)
	}
	return st.Hosts
}

// settledHosts returns the daemon's farm hosts once the one host runs no
// job: the launcher does not wait for the answer to its "done", so the
// daemon may count a job a moment after its launcher has exited.
func (e *env) settledHosts() []daemon.HostStatus {
	var hs []daemon.HostStatus
	poll(e.t, "the daemon to count the remote jobs", func() bool {
		hs = e.hosts()
		return len(hs) != 1 || hs[0].Running == 0
	})
	return hs
}

// TestFarmMake: a make build with one local slot sends compiles to a real
// distccd and builds; the daemon's count of the host's jobs is distccd's,
// every job is done once, and the link stays local.
func TestFarmMake(t *testing.T) {
	distcctest.Require(t, "make")
	shared := distcctest.SharedDir(t)
	d := distcctest.Start(t, shared, 1, 2)[0]
	e, dir := farmEnv(t, shared, d.Spec()), project(t, 8)
	out := run(t, e.cmd(dir, "make", "-j4", "CC="+e.launcher()+" gcc"))
	checkBuilt(t, e, dir, "prog", 10, out)
	hs := e.settledHosts()
	if len(hs) != 1 {
		t.Fatalf("status lists %d farm hosts, want 1: %+v", len(hs), hs)
	}
	logged := d.WaitCount(t, "COMPILE_OK", hs[0].Jobs)
	t.Logf("host %+v; distccd logged %d compiles", hs[0], logged)
	if hs[0].Jobs == 0 || hs[0].Jobs != logged || hs[0].Failures != 0 || hs[0].Running != 0 {
		t.Errorf("farm host %+v, distccd logged %d compiles: want some, the same number, no failures", hs[0], logged)
	}
	if hs[0].Jobs >= 9 {
		t.Errorf("%d of 9 compiles went remote; the local slot comes first", hs[0].Jobs)
	}
	text := run(t, e.cmd("", filepath.Join(binDir, "numasteal"), "status"))
	if !strings.Contains(text, "farm host 127.0.0.1:") || !strings.Contains(text, fmt.Sprintf("jobs %d, failures 0", hs[0].Jobs)) {
		t.Errorf("numasteal status does not show the host:\n%s", text)
	}
}

// TestFarmHostsDown: one host refuses connections (down at the daemon's
// probe, tried again after its back-off), the other takes them and hangs
// up (it answers the probe, and fails every compile). While a held job
// keeps the only local slot, the compiles go to the hosts and fail there;
// once it ends, the build succeeds, every compile runs here exactly once,
// and the build shows none of distcc's messages.
func TestFarmHostsDown(t *testing.T) {
	distcctest.Require(t, "make")
	shared := distcctest.SharedDir(t)
	hangup := distcctest.HangUp(t) + "/2"
	refused := fmt.Sprintf("127.0.0.1:%d/2", distcctest.FreePort(t))
	// The daemon a launcher starts reads the farm from $DISTCC_HOSTS.
	e, dir := newEnv(t, "--slots 1"), project(t, 8)
	e.vars = append(append(e.vars, distcctest.ClientEnv(shared)...), "DISTCC_HOSTS="+refused+" "+hangup)

	// A wrapper first in PATH named gcc, so that the compiles may go
	// remote, counts the compiles and the link (distcc's preprocessing
	// runs it too, with -E and no -o: an empty line).
	wrap := filepath.Join(dir, "wrap")
	ran := filepath.Join(dir, "ran")
	os.Mkdir(wrap, 0o755)
	real, err := exec.LookPath("gcc")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(wrap, "gcc"), countingCompiler(ran, real), 0o755)

	held, _ := startHeld(t, e, false)
	c := e.cmd(dir, "make", "-j8", "CC="+e.launcher()+" gcc")
	c.Env = append(c.Env, "PATH="+wrap+":"+os.Getenv("PATH"))
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	poll(t, "a compile to fail on each host", func() bool {
		hs := e.hosts()
		return len(hs) == 2 && hs[0].Failures >= 2 && hs[1].Failures >= 1 // the refused one failed its probe too
	})
	held.Process.Kill()
	held.Wait()
	if err := c.Wait(); err != nil {
		t.Fatalf("make: %v\n%s", err, out.String())
	}
	checkBuilt(t, e, dir, "prog", 11, out.String()) // and the held job
	if strings.Contains(out.String(), "distcc") {
		t.Errorf("the build shows distcc's messages:\n%s", out.String())
	}
	checkRanOnce(t, ran, 10) // 9 compiles, 1 link
	hs := e.hosts()
	t.Logf("hosts %+v", hs)
	for _, h := range hs {
		if h.Jobs != 0 || h.LastErr != "distcc exit 116" {
			t.Errorf("host %+v: want no jobs, and distcc's exit 116 (no host it could use) last", h)
		}
	}
}

// TestFarmCompileError: with the local slot held, a compile goes to the
// host; a failing one returns gcc's status and diagnostics, once (a run
// here would wait for the held slot), and counts against nobody; a good
// one compiles there.
func TestFarmCompileError(t *testing.T) {
	distcctest.Require(t, "make")
	shared := distcctest.SharedDir(t)
	d := distcctest.Start(t, shared, 1, 1)[0]
	e := farmEnv(t, shared, d.Spec())
	held, _ := startHeld(t, e, false)
	defer func() { held.Process.Kill(); held.Wait() }()

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.c"), []byte("int f(void) { return undeclared; }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "good.c"), []byte("int g(int x) { return 3 * x; }\n"), 0o644)
	compile := func(src string) (int, string) {
		c := e.cmd(dir, e.launcher(), "gcc", "-c", src, "-o", strings.TrimSuffix(src, ".c")+".o")
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(time.Minute, func() { c.Process.Kill() })
		err := c.Wait()
		if !timer.Stop() {
			t.Fatalf("gcc -c %s did not end: it waits for the local slot, so it was to run a second time\n%s", src, out.String())
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), out.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, out.String()
	}
	code, out := compile("bad.c")
	if code != 1 || !strings.Contains(out, "undeclared") {
		t.Errorf("failing compile: exit %d, want gcc's 1 with its diagnostics:\n%s", code, out)
	}
	if n := d.WaitCount(t, "COMPILE_ERROR", 1); n != 1 {
		t.Errorf("distccd ran the failing compile %d times, want 1", n)
	}
	if code, out := compile("good.c"); code != 0 {
		t.Errorf("good compile: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "good.o")); err != nil {
		t.Error(err)
	}
	hs := e.settledHosts()
	if len(hs) != 1 || hs[0].Jobs != 1 || hs[0].Failures != 0 || hs[0].Down {
		t.Errorf("farm hosts %+v: want one with the good compile, no failures", hs)
	}
	if n := d.WaitCount(t, "COMPILE_OK", 1); n != 1 {
		t.Errorf("distccd compiled %d, want 1", n)
	}
}
