package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envFaultTag marks every process of one fault scenario: the numasteal
// under test gets it, and its tasks and their descendants inherit it, so
// the test finds them all (escaped ones included) without asking the code
// under test.
const envFaultTag = "NUMASTEAL_FAULT_TAG"

// faultScenario is one way a run of numasteal ends.
type faultScenario struct {
	name string
	// commands is the command file; every command runs long unless ended.
	commands string
	// flags are extra flags of numasteal run.
	flags []string
	// end ends the run once every command has started (the file "up"
	// has a line per started command); nil lets the run end by itself.
	end func(p *os.Process)
	// exit is the exit status wanted; -1 means killed by SIGKILL.
	exit int
	// stdoutClosed runs numasteal with stdout a pipe whose reader is gone.
	stdoutClosed bool
	// stderr is a text the stderr must contain ("" for none).
	stderr string
	// tmpEmpty runs numasteal with its own TMPDIR and wants it empty
	// afterwards: no output spill file, no jobserver FIFO directory.
	tmpEmpty bool
}

func signalAll(sigs ...syscall.Signal) func(p *os.Process) {
	return func(p *os.Process) {
		for i, s := range sigs {
			if i > 0 {
				time.Sleep(50 * time.Millisecond) // the first is being handled
			}
			p.Signal(s)
		}
	}
}

// faultScenarios are the signal and kill scenarios; .ci/faults runs each
// many times.
func faultScenarios() []faultScenario {
	long := "echo started >> up; sleep 1000\n"
	escapes := "echo started >> up; setsid sleep 1001 & (set -m; sleep 1002 &); sleep 1000\n"
	return []faultScenario{
		{name: "SIGINT", commands: long + long, end: signalAll(syscall.SIGINT), exit: 130, stderr: "interrupted by SIGINT"},
		{name: "SIGTERM", commands: long + long, end: signalAll(syscall.SIGTERM), exit: 143, stderr: "interrupted by SIGTERM"},
		{name: "SIGHUP", commands: long + long, end: signalAll(syscall.SIGHUP), exit: 129, stderr: "interrupted by SIGHUP"},
		{name: "SIGQUIT", commands: long + long, end: signalAll(syscall.SIGQUIT), exit: 131, stderr: "interrupted by SIGQUIT"},
		{name: "escapees SIGINT", commands: escapes + escapes, end: signalAll(syscall.SIGINT), exit: 130},
		// A task that ignores SIGTERM, with an hour's grace: the second
		// interrupt kills it at once.
		{name: "second SIGINT", commands: "trap '' TERM; echo started >> up; sleep 1000\n", flags: []string{"--grace", "1h"},
			end: signalAll(syscall.SIGINT, syscall.SIGINT), exit: 130},
		{name: "SIGKILL", commands: escapes + long, end: signalAll(syscall.SIGKILL), exit: -1},
		// Output past the capture limit spills to $TMPDIR, and a FIFO
		// jobserver has its directory there: the watchdog removes both.
		{name: "SIGKILL temporary files", commands: "seq 1 100000; echo started >> up; sleep 1000\n" + long,
			flags: []string{"--jobserver", "--jobserver-style", "fifo"}, end: signalAll(syscall.SIGKILL), exit: -1, tmpEmpty: true},
		{name: "escapees at a normal end", commands: "echo started >> up; setsid sleep 1001 & (set -m; sleep 1002 &); true\n", exit: 0},
		{name: "escapees at a timeout", commands: escapes, flags: []string{"--timeout", "1s"}, exit: 1},
		// `numasteal run c | head -1`: the first task's status line is
		// read, then the reader goes; the second task ends only after
		// that (the file "closed"), so numasteal's next line meets a
		// broken pipe.
		{name: "SIGPIPE", commands: "true\nwhile [ ! -e closed ]; do sleep 0.01; done\nsleep 1000\n", stdoutClosed: true, exit: 141, stderr: "interrupted by SIGPIPE"},
	}
}

// TestFaults runs numasteal (this test binary as the command) through
// each fault scenario and checks that it exits as documented and that no
// process of the run is left alive, escaped ones and grandchildren
// included, shortly after numasteal is gone.
func TestFaults(t *testing.T) {
	for _, sc := range faultScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			runFault(t, sc)
		})
	}
}

func runFault(t *testing.T, sc faultScenario) {
	dir := t.TempDir()
	cmds := writeFile(t, dir, "cmds.txt", sc.commands)
	tag := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	args := append([]string{"-test.run=TestJobserverHelperProcess", "--", "run", "--history=", "--progress=lines", "-j", "4"}, sc.flags...)
	cmd := exec.Command(os.Args[0], append(args, cmds)...)
	cmd.Dir = dir
	cmd.Env = cleanEnv(envCLI+"=1", envFaultTag+"="+tag)
	tmp := filepath.Join(dir, "tmp")
	if sc.tmpEmpty {
		if err := os.Mkdir(tmp, 0o700); err != nil {
			t.Fatal(err)
		}
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	var stdoutR *os.File
	if sc.stdoutClosed {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, stdoutR = w, r
		defer w.Close()
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if stdoutR != nil {
		// Read the first line, then close the reader: `numasteal run | head -1`.
		buf := make([]byte, 1)
		for {
			if _, err := stdoutR.Read(buf); err != nil || buf[0] == '\n' {
				break
			}
		}
		stdoutR.Close()
		cmd.Stdout.(*os.File).Close()
		if err := os.WriteFile(filepath.Join(dir, "closed"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := strings.Count(sc.commands, "echo started")
	if sc.end != nil {
		up := filepath.Join(dir, "up")
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
			b, _ := os.ReadFile(up)
			if bytes.Count(b, []byte("started")) >= want {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the commands never all started; stderr:\n%s", stderr.String())
			}
		}
		sc.end(cmd.Process)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case <-waitErr:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		<-waitErr
		t.Fatalf("numasteal did not exit within a minute; stderr:\n%s", stderr.String())
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	got := ws.ExitStatus()
	if ws.Signaled() {
		got = -1
		if ws.Signal() != syscall.SIGKILL {
			t.Errorf("numasteal died of %v", ws.Signal())
		}
	}
	if got != sc.exit {
		t.Errorf("exit %d, want %d; stderr:\n%s", got, sc.exit, stderr.String())
	}
	if sc.stderr != "" && !strings.Contains(stderr.String(), sc.stderr) {
		t.Errorf("stderr lacks %q:\n%s", sc.stderr, stderr.String())
	}
	// Nothing of the run may outlive numasteal: after a SIGKILL its
	// watchdog ends the tasks within milliseconds; the deadline is for a
	// loaded host.
	var left []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left = taggedProcesses(tag)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if sc.tmpEmpty {
		var names []string
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			ents, _ := os.ReadDir(tmp)
			names = names[:0]
			for _, e := range ents {
				names = append(names, e.Name())
			}
			if len(names) == 0 || time.Now().After(deadline) {
				break
			}
		}
		if len(names) > 0 {
			t.Errorf("left in TMPDIR: %q", names)
		}
	}
	if len(left) > 0 {
		t.Errorf("left alive after numasteal exited: %s", strings.Join(left, "; "))
		for _, p := range left {
			if pid, err := strconv.Atoi(strings.Fields(p)[0]); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}

// taggedProcesses lists the live processes (zombies excluded) whose
// environment carries tag, as "PID CMDLINE".
func taggedProcesses(tag string) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	needle := []byte(envFaultTag + "=" + tag + "\x00")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, needle) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return out
}

// TestFaultSIGKILLReturnsTokens: numasteal joins a jobserver (a pipe of
// this test, with 2 tokens, as make -j3 would hand it), its tasks take
// both tokens, and numasteal is SIGKILLed. Its watchdog ends the tasks and
// writes the 2 tokens back, so the parent's pool is whole again, and
// nothing of the run is left.
func TestFaultSIGKILLReturnsTokens(t *testing.T) {
	t.Parallel()
	_, inPipe, fds := jobserverPipe(t, 3, 2) // the child gets it as fds 3, 4
	dir := t.TempDir()
	cmds := writeFile(t, dir, "cmds.txt", strings.Repeat("sleep 1000\n", 6))
	tag := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	cmd := exec.Command(os.Args[0], "-test.run=TestJobserverHelperProcess", "--",
		"run", "--history=", "--progress=none", "-j", "0", cmds)
	cmd.Env = cleanEnv(envCLI+"=1", envFaultTag+"="+tag, "MAKEFLAGS= -j3 --jobserver-auth=3,4")
	passJobserver(t, cmd, fds)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Both tokens taken, and three sleeps running (implicit slot + 2).
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		n, err := inPipe()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 && len(taggedProcesses(tag)) >= 1+3 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the tasks never took the tokens; stderr:\n%s", stderr.String())
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	var n int
	var left []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n, _ = inPipe()
		left = taggedProcesses(tag)
		if (n == 2 && len(left) == 0) || time.Now().After(deadline) {
			break
		}
	}
	if n != 2 {
		t.Errorf("%d tokens in the pipe after numasteal was killed, want the 2 it held", n)
	}
	if len(left) > 0 {
		t.Errorf("left alive after numasteal was killed: %s", strings.Join(left, "; "))
	}
}

// TestFaultNestedKillKeepsTheLimit: an outer numasteal run --jobserver
// -j 4 runs an inner numasteal, which joins the jobserver and runs three
// jobs on its slot and two tokens; another task SIGKILLs the inner. The
// inner's watchdog kills its jobs and writes the tokens back, and the
// inner's task gives its slot back only once every process under it is
// gone, so the four tasks that follow (they depend on the killer) never
// run beside a live job of the dead inner beyond the 4 slots. Each
// follower records, as it starts, how many of the inner's jobs are alive
// and how many followers run.
func TestFaultNestedKillKeepsTheLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	inner := writeFile(t, dir, "inner.txt", strings.Repeat("echo $$ >> "+dir+"/innerjobs; exec sleep 1000\n", 3))
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	follower := `touch ` + dir + `/run.$$; n=0; for p in $(cat ` + dir + `/innerjobs); do s=$(cut -d" " -f3 /proc/$p/stat 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ] && n=$((n+1)); done; ` +
		`echo "$n $(ls ` + dir + `/run.* | wc -l)" >> ` + dir + `/samples; sleep 0.3; rm ` + dir + `/run.$$`
	graph := `{"tasks": [` +
		`{"id": "inner", "shell": ` + quote(cliCommand()+" run --history= --progress=none -j 0 "+inner+" & echo $! > "+dir+"/innerpid; wait") + `},` +
		`{"id": "killer", "shell": ` + quote(`while [ "$(cat `+dir+`/innerjobs 2>/dev/null | wc -l)" -lt 3 ]; do sleep 0.01; done; kill -9 $(cat `+dir+`/innerpid)`) + `}`
	for i := range 4 {
		graph += fmt.Sprintf(`, {"id": "f%d", "shell": %s, "deps": ["killer"]}`, i, quote(follower))
	}
	graph += "]}"
	g := writeFile(t, dir, "outer.json", graph)
	tag := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	cmd := exec.Command(os.Args[0], "-test.run=TestJobserverHelperProcess", "--",
		"run", "--history=", "--progress=none", "--jobserver", "-j", "4", "-k", g)
	cmd.Env = cleanEnv(envCLI+"=1", envFaultTag+"="+tag)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the outer run did not end; stderr:\n%s", stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "samples"))
	if err != nil {
		t.Fatalf("no follower ran (%v); stderr:\n%s", err, stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var alive, running int
		if _, err := fmt.Sscan(line, &alive, &running); err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		// While any job of the inner lives, the inner's task holds its
		// slot (the first job's) and each further job a token: alive
		// slots, beside the followers' own. A job that has ended but
		// waits to be reaped (a zombie: the killed inner's orphans are
		// the subreaper's, which reaps them within 50 ms) does not count.
		t.Logf("follower started: %d inner jobs alive, %d followers running", alive, running)
		if running+alive > 4 {
			t.Errorf("a follower started with %d of the killed inner's jobs alive and %d followers running: more than 4 jobs", alive, running)
		}
	}
	if left := taggedProcesses(tag); len(left) > 0 {
		t.Errorf("left alive: %s", strings.Join(left, "; "))
	}
}
