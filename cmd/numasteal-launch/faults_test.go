package main

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestDaemonDown: no daemon can be started; the build runs directly and
// warns once.
func TestDaemonDown(t *testing.T) {
	need(t, "make", "gcc")
	e, dir := newEnv(t, ""), project(t, 6)
	c := e.cmd(dir, "make", "-j8", "CC="+e.launcher()+" gcc")
	c.Env = append(c.Env, "NUMASTEAL_BIN=/nonexistent/numasteal")
	out := run(t, c)
	if err := exec.Command(filepath.Join(dir, "prog")).Run(); err != nil {
		t.Fatalf("the built program fails: %v", err)
	}
	if n := strings.Count(out, "warning: running commands of this build directly"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, out)
	}
}

// TestExitStatus: the command's exit status and ending signal are the
// launcher's.
func TestExitStatus(t *testing.T) {
	e := newEnv(t, "")
	err := e.cmd("", e.launcher(), "sh", "-c", "exit 7").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Errorf("exit 7: got %v", err)
	}
	err = e.cmd("", e.launcher(), "sh", "-c", "kill -TERM $$").Run()
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Errorf("killed by SIGTERM: got %v", err)
	}
}

// startHeld starts a launcher whose command writes its pid to a file and
// sleeps, and waits until it runs; it returns the launcher and the
// command's pid. A measured command names an output the daemon has not
// seen ("-o FILE", which sh takes as $0 and $1), so the launcher forks it
// and waits; otherwise the launcher hands off and is the command.
func startHeld(t *testing.T, e *env, measured bool) (*exec.Cmd, int) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "pid")
	args := []string{"sh", "-c", "echo $$ > " + marker + ".tmp && mv " + marker + ".tmp " + marker + " && exec sleep 600"}
	if measured {
		args = append(args, "-o", filepath.Join(dir, "out"))
	}
	c := e.cmd("", e.launcher(), args...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	poll(t, "the launched command to start", func() bool {
		b, err := os.ReadFile(marker)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return c, pid
}

func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// TestSignalPassesThrough: SIGINT to the launcher alone reaches the
// command, and the launcher dies of it as the command did, handed off (the
// launcher is the command) and measured (the launcher forwards it).
func TestSignalPassesThrough(t *testing.T) {
	for _, measured := range []bool{false, true} {
		e := newEnv(t, "")
		c, pid := startHeld(t, e, measured)
		if measured != (pid != c.Process.Pid) {
			t.Errorf("measured %v: the command's pid %d, the launcher's %d", measured, pid, c.Process.Pid)
		}
		c.Process.Signal(syscall.SIGINT)
		err := c.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
			t.Errorf("measured %v: launcher: got %v, want killed by SIGINT", measured, err)
		}
		poll(t, "the command to end", func() bool { return !alive(pid) })
	}
}

// TestKilledLauncherFreesSlot: with one slot, a launcher SIGKILLed while
// it runs gives the slot back, and one SIGKILLed while it waits leaves no
// job behind. Handed off, the launcher is the command, and the daemon sees
// it end (a job done); measured, the command dies by Pdeathsig, and the
// killed launcher reports nothing.
func TestKilledLauncherFreesSlot(t *testing.T) {
	for _, measured := range []bool{false, true} {
		e := newEnv(t, "--slots 1")
		held, pid := startHeld(t, e, measured)
		waiter := e.cmd("", e.launcher(), "true")
		if err := waiter.Start(); err != nil {
			t.Fatal(err)
		}
		poll(t, "the second launcher to wait", func() bool { return strings.Contains(e.statusJSON(), `"waiting":1`) })
		waiter.Process.Kill()
		waiter.Wait()
		held.Process.Kill()
		held.Wait()
		poll(t, "the command to die with its launcher", func() bool { return !alive(pid) })
		if err := e.cmd("", e.launcher(), "true").Run(); err != nil {
			t.Fatalf("measured %v: a launcher after the kills: %v", measured, err)
		}
		want := "2"
		if measured {
			want = "1"
		}
		if got := e.done(); got != want {
			t.Errorf("measured %v: done = %s, want %s", measured, got, want)
		}
	}
}

func (e *env) statusJSON() string {
	out, _ := e.cmd("", filepath.Join(binDir, "numasteal"), "status", "--json").Output()
	return string(out)
}

// TestDaemonKilledMidBuild: the daemon is SIGKILLed while compiles run
// and wait; the build completes and every compile ran exactly once.
func TestDaemonKilledMidBuild(t *testing.T) {
	need(t, "make", "gcc")
	e, dir := newEnv(t, "--slots 1"), project(t, 8)
	ran := filepath.Join(dir, "ran")
	wrap := filepath.Join(dir, "cc-count")
	os.WriteFile(wrap, countingCompiler(ran, "gcc"), 0o755)
	c := e.cmd(dir, "make", "-j8", "CC="+e.launcher()+" "+wrap)
	var out strings.Builder
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	poll(t, "the first compile", func() bool { b, _ := os.ReadFile(ran); return len(b) > 0 })
	first := e.daemonPID()
	e.killDaemon()
	if err := c.Wait(); err != nil {
		t.Fatalf("make: %v\n%s", err, out.String())
	}
	checkRanOnce(t, ran, 10) // 9 compiles, 1 link
	if second := e.daemonPID(); second == first {
		t.Errorf("daemon %d still holds the lock after SIGKILL", first)
	}
}

// TestStaleSocket: a socket file left by a dead daemon is replaced.
func TestStaleSocket(t *testing.T) {
	e := newEnv(t, "")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: e.sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(e.sock); err != nil {
		t.Fatal("the stale socket file is gone already")
	}
	out := run(t, e.cmd("", e.launcher(), "true"))
	if out != "" || e.done() != "1" {
		t.Errorf("launch over a stale socket: %q, done %s", out, e.done())
	}
}

// TestStartRace: many launchers find no daemon at once; exactly one
// daemon starts and every launcher uses it.
func TestStartRace(t *testing.T) {
	e := newEnv(t, "")
	const n = 24
	var wg sync.WaitGroup
	errs := make([]error, n)
	outs := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := e.cmd("", e.launcher(), "true").CombinedOutput()
			errs[i], outs[i] = err, string(b)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || outs[i] != "" {
			t.Errorf("launcher %d: %v %q", i, errs[i], outs[i])
		}
	}
	log, _ := os.ReadFile(e.sock + ".log")
	if starts := strings.Count(string(log), " on "+e.sock); starts != 1 {
		t.Errorf("%d daemons started, want 1:\n%s", starts, log)
	}
	if got := e.done(); got != strconv.Itoa(n) {
		t.Errorf("done = %s, want %d", got, n)
	}
}

// TestBadRequests: malformed lines, other versions and unknown verbs get
// an error reply, and the daemon keeps serving.
func TestBadRequests(t *testing.T) {
	e := newEnv(t, "")
	run(t, e.cmd("", e.launcher(), "true")) // starts the daemon
	for _, line := range []string{
		"ns1 frobnicate\n", "ns2 acquire\n", "GET / HTTP/1.0\n", "ns1 acquire out=%zz\n",
		"ns1 done\n", strings.Repeat("x", 70<<10) + "\n", "\x00\xff\n",
	} {
		c, err := net.Dial("unix", e.sock)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(line))
		reply, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if !strings.HasPrefix(reply, "ns1 error ") {
			t.Errorf("reply to %.30q: %q, want an error", line, reply)
		}
	}
	if err := e.cmd("", e.launcher(), "true").Run(); err != nil || e.done() != "2" {
		t.Errorf("the daemon after bad requests: %v, done %s", err, e.done())
	}
}

// TestOtherUser: another user cannot reach the daemon (the 0700
// directory; the daemon also checks SO_PEERCRED).
func TestOtherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a command as another user")
	}
	e := newEnv(t, "")
	run(t, e.cmd("", e.launcher(), "true"))
	c := e.cmd("", filepath.Join(binDir, "numasteal"), "status")
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := c.CombinedOutput(); err == nil {
		t.Errorf("uid 65534 reached the daemon:\n%s", out)
	}
}

// countingCompiler is a /bin/sh wrapper of the compiler cc that appends
// each command's -o argument (an empty line for none: a preprocessing
// run) to the file ran, then execs cc.
func countingCompiler(ran, cc string) []byte {
	return []byte("#!/bin/sh\nprev=; for a; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\necho \"$out\" >> " + ran + "\nexec " + cc + " \"$@\"\n")
}

// checkRanOnce checks that the file a countingCompiler wrote names want
// outputs, none twice.
func checkRanOnce(t *testing.T, ran string, want int) {
	t.Helper()
	b, _ := os.ReadFile(ran)
	lines := strings.Fields(string(b))
	sort.Strings(lines)
	if len(lines) != want {
		t.Errorf("%d commands ran, want %d, each once: %v", len(lines), want, lines)
	}
	for i := 1; i < len(lines); i++ {
		if lines[i] == lines[i-1] {
			t.Errorf("%s ran twice", lines[i])
		}
	}
}
