package main

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The tests run the real binaries: TestMain builds numasteal and
// numasteal-launch into binDir once.
var binDir string

func TestMain(m *testing.M) {
	if os.Getenv("NUMASTEAL_TEST_HELPER") != "" {
		os.Exit(helper())
	}
	dir, err := os.MkdirTemp("", "numasteal-launch-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	build := exec.Command("go", "build", "-o", dir+"/", "github.com/numasteal/numasteal/cmd/numasteal", "github.com/numasteal/numasteal/cmd/numasteal-launch")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the binaries:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// helper is the test binary run as a build's command. Mode "touch": the
// "link" of the memory test: it touches $MB MiB, and keeps, under an flock
// of $COUNTER, the MiB of the helpers running at once and the most ever
// seen ("cur max" in the file).
func helper() int {
	if os.Getenv("NUMASTEAL_TEST_HELPER") == "sigexec" {
		return sigexec()
	}
	mb, _ := strconv.Atoi(os.Getenv("MB"))
	counter := os.Getenv("COUNTER")
	add := func(d int) {
		f, err := os.OpenFile(counter, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			panic(err)
		}
		defer f.Close()
		unix.Flock(int(f.Fd()), unix.LOCK_EX)
		var cur, mx int
		b, _ := os.ReadFile(counter)
		fmt.Sscanf(string(b), "%d %d", &cur, &mx)
		cur += d
		mx = max(mx, cur)
		f.Truncate(0)
		f.WriteAt([]byte(fmt.Sprintf("%d %d\n", cur, mx)), 0)
	}
	add(mb)
	buf := make([]byte, mb<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	add(-mb)
	out := ""
	for i, a := range os.Args {
		if a == "-o" && i+1 < len(os.Args) {
			out = os.Args[i+1]
		}
	}
	if out != "" {
		os.WriteFile(out, []byte("linked\n"), 0o644)
	}
	return int(buf[len(buf)/2]) - 1
}

// env is one test's daemon: a runtime directory of its own, the daemon
// started by the first launcher with serveFlags.
type env struct {
	t    *testing.T
	dir  string
	sock string
	vars []string
}

func newEnv(t *testing.T, serveFlags string) *env {
	dir, err := os.MkdirTemp("", "nsl-") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o700)
	e := &env{t: t, dir: dir, sock: filepath.Join(dir, "sock")}
	e.vars = []string{
		"NUMASTEAL_SOCKET=" + e.sock,
		"NUMASTEAL_BIN=" + filepath.Join(binDir, "numasteal"),
		"NUMASTEAL_SERVE_FLAGS=--idle 60s --slots 2 " + serveFlags,
		"NUMASTEAL_BUILD=", // the build is found from the process tree
		"NUMASTEAL_SLOT=",
		"DISTCC_HOSTS=", // no farm but the one a test names (--farm)
	}
	t.Cleanup(func() {
		e.killDaemon()
		e.killDaemon() // one a last launcher may have started
		os.RemoveAll(dir)
	})
	return e
}

func (e *env) launcher() string { return filepath.Join(binDir, "numasteal-launch") }

// cmd returns a command with the env's variables.
func (e *env) cmd(dir string, name string, args ...string) *exec.Cmd {
	c := exec.Command(name, args...)
	c.Dir = dir
	c.Env = append(os.Environ(), e.vars...)
	return c
}

// daemonPID returns the pid the live daemon wrote in its lock file, 0 if
// none holds the lock.
func (e *env) daemonPID() int {
	f, err := os.Open(e.sock + ".lock")
	if err != nil {
		return 0
	}
	defer f.Close()
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return 0 // nobody holds it
	}
	b, _ := os.ReadFile(e.sock + ".lock")
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// killDaemon SIGKILLs the live daemon and waits until it no longer holds
// the lock (a launcher may have started the next one meanwhile).
func (e *env) killDaemon() {
	if pid := e.daemonPID(); pid > 0 {
		syscall.Kill(pid, syscall.SIGKILL)
		poll(e.t, "the daemon to die", func() bool { return e.daemonPID() != pid })
	}
}

// status returns numasteal status --json's field key.
func (e *env) status(key string) string {
	out, err := e.cmd("", filepath.Join(binDir, "numasteal"), "status", "--json").Output()
	if err != nil {
		e.t.Fatalf("numasteal status: %v", err)
	}
	s := string(out)
	i := strings.Index(s, `"`+key+`":`)
	if i < 0 {
		e.t.Fatalf("status has no %s: %s", key, s)
	}
	v := s[i+len(key)+3:]
	return v[:strings.IndexAny(v, ",}")]
}

// poll waits for cond, failing after 60 s.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// project writes a small C project of n sources and a Makefile using $(CC)
// into a new directory.
func project(t *testing.T, n int) string {
	dir := t.TempDir()
	var objs, calls, decls []string
	for i := range n {
		src := fmt.Sprintf("int f%d(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * %d; return s; }\n", i, i+1)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.c", i)), []byte(src), 0o644)
		objs = append(objs, fmt.Sprintf("f%d.o", i))
		decls = append(decls, fmt.Sprintf("int f%d(int);", i))
		calls = append(calls, fmt.Sprintf("f%d(3)", i))
	}
	main := strings.Join(decls, "\n") + "\nint main(void) { return (" + strings.Join(calls, "+") + ") == 0; }\n"
	os.WriteFile(filepath.Join(dir, "main.c"), []byte(main), 0o644)
	mk := "CC ?= cc\nprog: main.o " + strings.Join(objs, " ") + "\n\t$(CC) -o $@ $^\n%.o: %.c\n\t$(CC) -c $< -o $@\n"
	os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644)
	cm := "cmake_minimum_required(VERSION 3.21)\nproject(p C)\nadd_executable(prog main.c " +
		strings.ReplaceAll(strings.Join(objs, " "), ".o", ".c") + ")\n"
	os.WriteFile(filepath.Join(dir, "CMakeLists.txt"), []byte(cm), 0o644)
	srcs := "'main.c'"
	for i := range n {
		srcs += fmt.Sprintf(", 'f%d.c'", i)
	}
	os.WriteFile(filepath.Join(dir, "meson.build"), []byte("project('p', 'c')\nexecutable('prog', "+srcs+")\n"), 0o644)
	return dir
}

func need(t *testing.T, tools ...string) {
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (.ci/run installs it)", tool)
		}
	}
}

func run(t *testing.T, c *exec.Cmd) string {
	t.Helper()
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(c.Args, " "), err, out.String())
	}
	return out.String()
}

// checkBuilt runs dir/prog and checks every job went through the daemon.
func checkBuilt(t *testing.T, e *env, dir string, prog string, jobs int, out string) {
	t.Helper()
	if err := exec.Command(filepath.Join(dir, prog)).Run(); err != nil {
		t.Fatalf("the built program fails: %v", err)
	}
	if strings.Contains(out, "warning") {
		t.Errorf("the build warned:\n%s", out)
	}
	if got := e.done(); got != strconv.Itoa(jobs) {
		t.Errorf("daemon ran %s jobs, want %d\n%s", got, jobs, out)
	}
}

func TestMakeCC(t *testing.T) {
	need(t, "make", "gcc")
	e, dir := newEnv(t, ""), project(t, 6)
	out := run(t, e.cmd(dir, "make", "-j8", "CC="+e.launcher()+" gcc"))
	checkBuilt(t, e, dir, "prog", 8, out)
}

// TestNumastealLaunch: the same through the full binary's "launch".
func TestNumastealLaunch(t *testing.T) {
	need(t, "make", "gcc")
	e, dir := newEnv(t, ""), project(t, 2)
	out := run(t, e.cmd(dir, "make", "-j4", "CC="+filepath.Join(binDir, "numasteal")+" launch gcc"))
	checkBuilt(t, e, dir, "prog", 4, out)
}

func TestMasquerade(t *testing.T) {
	need(t, "make", "gcc")
	e, dir := newEnv(t, ""), project(t, 4)
	masq := t.TempDir()
	for _, name := range []string{"cc", "gcc", "ld"} {
		if err := os.Symlink(e.launcher(), filepath.Join(masq, name)); err != nil {
			t.Fatal(err)
		}
	}
	c := e.cmd(dir, "make", "-j8", "CC=cc")
	c.Env = append(c.Env, "PATH="+masq+":"+os.Getenv("PATH"))
	out := run(t, c)
	// gcc runs ld (through collect2) from its own directories, and if it
	// found the masqueraded one it would run in the slot already held.
	checkBuilt(t, e, dir, "prog", 6, out)
}

func TestCMakeNinja(t *testing.T) {
	need(t, "cmake", "ninja", "gcc")
	e, dir := newEnv(t, ""), project(t, 4)
	bdir := filepath.Join(dir, "build")
	run(t, e.cmd(dir, "cmake", "-G", "Ninja", "-S", ".", "-B", bdir,
		"-DCMAKE_C_COMPILER_LAUNCHER="+e.launcher(), "-DCMAKE_C_LINKER_LAUNCHER="+e.launcher()))
	before, _ := strconv.Atoi(e.done())
	out := run(t, e.cmd(bdir, "ninja"))
	after, _ := strconv.Atoi(e.done())
	if err := exec.Command(filepath.Join(bdir, "prog")).Run(); err != nil {
		t.Fatalf("the built program fails: %v\n%s", err, out)
	}
	if after-before != 6 {
		t.Errorf("ninja ran %d jobs through the daemon, want 6 (5 compiles, 1 link)\n%s", after-before, out)
	}
}

func TestMeson(t *testing.T) {
	need(t, "meson", "ninja", "gcc")
	e, dir := newEnv(t, ""), project(t, 4)
	bdir := filepath.Join(dir, "build")
	c := e.cmd(dir, "meson", "setup", bdir)
	c.Env = append(c.Env, "CC="+e.launcher()+" gcc")
	run(t, c)
	before, _ := strconv.Atoi(e.done())
	out := run(t, e.cmd(bdir, "ninja"))
	after, _ := strconv.Atoi(e.done())
	if err := exec.Command(filepath.Join(bdir, "prog")).Run(); err != nil {
		t.Fatalf("the built program fails: %v\n%s", err, out)
	}
	if after-before != 6 {
		t.Errorf("meson's ninja ran %d jobs through the daemon, want 6\n%s", after-before, out)
	}
}

// done returns the daemon's count of jobs done once nothing runs or waits
// ("0" when no daemon runs yet). A job's end reaches the daemon a moment
// after its process ended: the measured launcher's report is not awaited,
// and a handed-off job ends when the daemon's pidfd watch sees it.
func (e *env) done() string {
	if e.daemonPID() == 0 {
		return "0"
	}
	poll(e.t, "the daemon to see every job end", func() bool {
		return strings.Contains(e.statusJSON(), `"running":[],"waiting":[]`)
	})
	return e.status("done")
}

// TestLauncherIsStatic: the launcher starts before every compile, so it
// must not need the dynamic loader (package net would link cgo and make
// it a dynamic executable, a millisecond more per job).
func TestLauncherIsStatic(t *testing.T) {
	f, err := elf.Open(filepath.Join(binDir, "numasteal-launch"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("numasteal-launch has a program interpreter (dynamically linked): something it imports links cgo")
		}
	}
}

// TestHandoffAfterLearning: a command whose output the daemon has not
// seen runs measured (a child of the launcher, which reports its peak
// RSS); once the daemon knows it, the launcher execs it in its own place
// (the command's pid is the launcher's), and the slot is free again when
// it ends.
func TestHandoffAfterLearning(t *testing.T) {
	e := newEnv(t, "--slots 1")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	pids := filepath.Join(dir, "pids")
	for round, wantHandoff := range []bool{false, true} {
		c := e.cmd("", e.launcher(), "sh", "-c", "echo $$ $PPID >> "+pids, "-o", out)
		run(t, c)
		b, _ := os.ReadFile(pids)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var pid, ppid int
		fmt.Sscanf(lines[len(lines)-1], "%d %d", &pid, &ppid)
		if handedOff := pid == c.Process.Pid; handedOff != wantHandoff {
			t.Errorf("run %d: handed off %v (command pid %d, its parent %d, launcher %d), want %v",
				round+1, handedOff, pid, ppid, c.Process.Pid, wantHandoff)
		}
		if got, want := e.done(), strconv.Itoa(round+1); got != want {
			t.Errorf("run %d: done = %s, want %s", round+1, got, want)
		}
	}
	if got := e.status("learned_outputs"); got != "1" {
		t.Errorf("learned_outputs = %s, want 1", got)
	}
}
