package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/numasteal/numasteal/runtime"
	"github.com/numasteal/numasteal/supervise"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newTestRuntime starts a runtime on the live machine and closes it when
// the test ends (after the runners made later, which close first).
func newTestRuntime(t testing.TB, cfg runtime.Config) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.New(cfg)
	if err != nil {
		t.Fatalf("runtime.New: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// cpuTime returns the CPU time this process has used.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// newTestRunner starts a runner on rt (as a subreaper, so the tests can
// demand that no orphan is left anywhere) and closes it when the test ends.
func newTestRunner(t testing.TB, rt *runtime.Runtime, cfg Config) *Runner {
	t.Helper()
	cfg.Subreaper = true
	r, err := NewRunner(rt, cfg)
	if err != nil {
		t.Fatalf("NewRunner: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// procEntry is one line of /proc/PID/stat that matters here.
type procEntry struct {
	pid, ppid, pgrp int
	state           string
	comm            string
}

// scanProcs lists every process whose parent is this test process or whose
// process group is one of pgids.
func scanProcs(t *testing.T, pgids ...int) []procEntry {
	t.Helper()
	self := os.Getpid()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("reading /proc: %v", err)
	}
	var out []procEntry
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:]) // state ppid pgrp ...
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		p := procEntry{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0], comm: s[strings.IndexByte(s, '(')+1 : i]}
		match := ppid == self
		for _, g := range pgids {
			if g > 0 && pgrp == g {
				match = true
			}
		}
		if match {
			out = append(out, p)
		}
	}
	return out
}

// requireNoProcesses fails when a child of this process (zombie or not) or
// a member of one of the groups is left.
func requireNoProcesses(t *testing.T, pgids ...int) {
	t.Helper()
	if left := scanProcs(t, pgids...); len(left) > 0 {
		t.Fatalf("processes left behind: %+v", left)
	}
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

func TestProcessFaultMatrix(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	r := newTestRunner(t, rt, Config{Grace: 300 * time.Millisecond})
	dir := t.TempDir()
	noExec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		cmd     Command
		outcome Outcome
		exit    int
		signal  syscall.Signal
		timeout bool
		errIs   error
		stdout  string
		stderr  string
		started bool
	}{
		{name: "success", cmd: Command{Args: sh("echo out; echo err >&2")}, outcome: Succeeded, stdout: "out\n", stderr: "err\n", started: true},
		{name: "exit status", cmd: Command{Args: sh("echo bad >&2; exit 3")}, outcome: Failed, exit: 3, stderr: "bad\n", started: true},
		{name: "killed by signal", cmd: Command{Args: sh("kill -KILL $$")}, outcome: Failed, exit: -1, signal: syscall.SIGKILL, started: true},
		{name: "missing binary", cmd: Command{Args: []string{"numasteal-no-such-program"}}, outcome: Failed, exit: -1, errIs: exec.ErrNotFound},
		{name: "missing absolute path", cmd: Command{Args: []string{filepath.Join(dir, "absent")}}, outcome: Failed, exit: -1, errIs: os.ErrNotExist},
		{name: "not executable", cmd: Command{Args: []string{noExec}}, outcome: Failed, exit: -1, errIs: os.ErrPermission},
		{name: "empty argv", cmd: Command{}, outcome: Failed, exit: -1},
		{name: "timeout", cmd: Command{Args: []string{"sleep", "30"}, Timeout: 100 * time.Millisecond}, outcome: Failed, exit: -1, signal: syscall.SIGTERM, timeout: true, errIs: ErrTimeout, started: true},
		// The shell must have set its trap before the timeout fires: a
		// run whose shell had not yet printed "armed" is repeated with a
		// doubled timeout (see runArmed), so a loaded host cannot turn
		// this case into a plain SIGTERM.
		{name: "timeout ignoring SIGTERM", cmd: Command{Args: sh(`trap "" TERM; echo armed; sleep 30`), Timeout: 300 * time.Millisecond}, outcome: Failed, exit: -1, signal: syscall.SIGKILL, timeout: true, errIs: ErrTimeout, stdout: "armed\n", started: true},
		{name: "background job outliving the command", cmd: Command{Args: sh("sleep 30 & echo hi")}, outcome: Succeeded, stdout: "hi\n", started: true},
		{name: "working directory and environment", cmd: Command{Args: sh(`pwd; echo "$NS_X"`), Dir: dir, Env: []string{"NS_X=42"}}, outcome: Succeeded, stdout: dir + "\n42\n", started: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := runArmed(t, r, tc.cmd, tc.stdout == "armed\n")
			defer res.Close()
			if res.Outcome != tc.outcome {
				t.Fatalf("outcome %v (err %v), want %v", res.Outcome, res.Err, tc.outcome)
			}
			if (res.Err == nil) != (tc.outcome == Succeeded) {
				t.Errorf("err %v with outcome %v", res.Err, res.Outcome)
			}
			if tc.errIs != nil && !errors.Is(res.Err, tc.errIs) {
				t.Errorf("err %v, want one that is %v", res.Err, tc.errIs)
			}
			if tc.started {
				if res.ExitCode != tc.exit || res.Signal != tc.signal || res.TimedOut != tc.timeout {
					t.Errorf("exit %d signal %v timedOut %v, want %d %v %v", res.ExitCode, res.Signal, res.TimedOut, tc.exit, tc.signal, tc.timeout)
				}
				if res.Pid <= 0 || res.Start.IsZero() || res.End.Before(res.Start) || res.Wall <= 0 {
					t.Errorf("pid %d start %v end %v wall %v", res.Pid, res.Start, res.End, res.Wall)
				}
			} else if res.Pid != -1 {
				t.Errorf("pid %d for a command that never started", res.Pid)
			}
			if tc.outcome == Failed && tc.started {
				var pe *ExitError
				if !errors.As(res.Err, &pe) {
					t.Errorf("err %T %v, want a *ExitError", res.Err, res.Err)
				}
			}
			out, _ := res.Stdout.Bytes()
			errOut, _ := res.Stderr.Bytes()
			if string(out) != tc.stdout || string(errOut) != tc.stderr {
				t.Errorf("stdout %q stderr %q, want %q %q", out, errOut, tc.stdout, tc.stderr)
			}
			requireNoProcesses(t, res.Pid)
		})
	}
}

// runArmed runs cmd; when armed is set, cmd prints "armed" once it is
// ready for its timeout, and a run killed before that is repeated with
// twice the timeout (up to 20 s), so that the test exercises what cmd
// does once armed whatever the host's load.
func runArmed(t *testing.T, r *Runner, cmd Command, armed bool) *Result {
	t.Helper()
	for {
		res := r.Run(context.Background(), cmd)
		out, _ := res.Stdout.Bytes()
		if !armed || string(out) == "armed\n" || cmd.Timeout > 20*time.Second {
			return res
		}
		t.Logf("killed before it was armed after %v (%v); again with twice the timeout", cmd.Timeout, res.Err)
		res.Close()
		cmd.Timeout *= 2
	}
}

// waitOutput polls until the process task has printed something, i.e. it
// and its children are running.
func waitOutput(t *testing.T, p *Process) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	// Pid is published after the fork returns, which may be after the
	// child has already written: wait for both.
	for p.result.Stdout.Len() == 0 || p.Pid() < 0 {
		if time.Now().After(deadline) {
			t.Fatal("the command printed nothing in a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A command that forks grandchildren (some in subshells, one ignoring
// SIGTERM) is canceled mid-run: it reports Canceled, and nothing of its
// process group, and no zombie, is left.
func TestProcessCancelKillsGrandchildren(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	r := newTestRunner(t, rt, Config{Grace: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := r.Start(ctx, Command{Args: sh(`sleep 30 & (sleep 30; echo no) & (trap "" TERM; sleep 30) & sh -c 'sleep 30 & wait' & echo started; wait`)})
	waitOutput(t, p)
	pid := p.Pid()
	if n := len(scanProcs(t, pid)); n < 5 {
		t.Fatalf("only %d processes in the group before the cancel, want the command and its grandchildren", n)
	}
	cancel()
	res := p.Wait()
	defer res.Close()
	if res.Outcome != Canceled || !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("outcome %v err %v, want canceled", res.Outcome, res.Err)
	}
	requireNoProcesses(t, pid)
}

func TestProcessCanceledBeforeStart(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	r := newTestRunner(t, rt, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := r.Run(ctx, Command{Args: []string{"true"}})
	if res.Outcome != Canceled || res.Pid != -1 || !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("outcome %v pid %d err %v, want canceled before start", res.Outcome, res.Pid, res.Err)
	}
}

// The child and its own children start confined to the placed CPU (or its
// node's CPUs). A task run alone gets its node's CPUs under PinCPU too
// when the node has another CPU, free of the runner's work.
func TestProcessAffinity(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	for _, mode := range []PinMode{PinCPU, PinNode} {
		t.Run(mode.String(), func(t *testing.T) {
			r := newTestRunner(t, rt, Config{Pin: mode})
			for range 2 * rt.Workers() {
				res := r.Run(context.Background(), Command{Args: sh(`grep Cpus_allowed_list /proc/self/status; sh -c 'grep Cpus_allowed_list /proc/self/status'`)})
				out, _ := res.Stdout.Bytes()
				res.Close()
				if !res.Success() {
					t.Fatalf("err %v", res.Err)
				}
				want := "Cpus_allowed_list:\t" + res.Affinity.String() + "\n"
				if res.Affinity.IsEmpty() || string(out) != want+want {
					t.Fatalf("affinity %q, child saw %q", res.Affinity, out)
				}
				// Alone, the child gets its node's CPUs (its CPU when the
				// node has no other, or no usable CPU to speak of).
				node, _ := rt.Topology().Node(res.Node)
				if node.Usable.Len() > 1 && !res.Affinity.Equal(node.Usable) {
					t.Fatalf("%v, alone: %q for CPU %d, want node %d's CPUs %s", mode, res.Affinity, res.CPU, res.Node, node.Usable)
				}
			}
		})
	}
}

// waitMask waits for a process that printed its Cpus_allowed_list line
// and returns its result, after checking that it saw the affinity its
// result names.
func waitMask(t *testing.T, p *Process) *Result {
	t.Helper()
	res := p.Wait()
	out, _ := res.Stdout.Bytes()
	res.Close()
	if !res.Success() {
		t.Fatalf("err %v", res.Err)
	}
	if want := "Cpus_allowed_list:\t" + res.Affinity.String() + "\n"; string(out) != want {
		t.Fatalf("affinity %q, child saw %q", res.Affinity, out)
	}
	return res
}

// PinCPU pins a process to its CPU once the runner's processes fill the
// node: with one slot per CPU, processes started one after another (each
// running before the next is placed) take one CPU each, and the last
// placed on each node, which has the only CPU left, is pinned to it; the
// others, placed while a CPU of their node was free, got their node's
// CPUs.
func TestProcessPinsWhenNodeFull(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	n := rt.Workers()
	r := newTestRunner(t, rt, Config{Pin: PinCPU, Slots: n})
	release := filepath.Join(t.TempDir(), "go")
	var ps []*Process
	for range n {
		p := r.Start(context.Background(), Command{Args: sh(`grep Cpus_allowed_list /proc/self/status; while [ ! -e ` + release + ` ]; do sleep 0.01; done`)})
		waitOutput(t, p)
		ps = append(ps, p)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pinned := map[int]int{} // per node
	for _, p := range ps {
		res := waitMask(t, p)
		if res.Affinity.String() == strconv.Itoa(res.CPU) {
			pinned[res.Node]++
		}
	}
	for _, node := range rt.Topology().Nodes {
		if node.Usable.IsEmpty() {
			continue
		}
		if pinned[node.ID] != 1 {
			t.Errorf("node %d (%s): %d processes pinned to their CPU, want 1, the last placed there", node.ID, node.Usable, pinned[node.ID])
		}
	}
}

// With more slots than CPUs, PinCPU pins a process to its CPU only while
// it has the CPU to itself: the processes placed on CPUs that already run
// one get their node's CPUs, so the kernel can balance them.
func TestProcessOversubscribedPinsToNode(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	n := rt.Workers()
	r := newTestRunner(t, rt, Config{Pin: PinCPU, Slots: 2 * n})
	// Every process runs until all have started and printed their mask:
	// then the file go appears and they end.
	release := filepath.Join(t.TempDir(), "go")
	var ps []*Process
	for range 2 * n {
		ps = append(ps, r.Start(context.Background(), Command{Args: sh(`grep Cpus_allowed_list /proc/self/status; while [ ! -e ` + release + ` ]; do sleep 0.01; done`)}))
	}
	for _, p := range ps {
		waitOutput(t, p)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	exclusive := map[int]bool{}
	shared := 0
	for _, p := range ps {
		res := waitMask(t, p)
		node, _ := rt.Topology().Node(res.Node)
		if node.Usable.Len() == 1 {
			// One usable CPU in the node: its CPU and its node are one
			// mask, and every process shares it.
			if !res.Affinity.Equal(node.Usable) {
				t.Errorf("affinity %q on a node whose only usable CPU is %s", res.Affinity, node.Usable)
			}
			shared++
			continue
		}
		switch res.Affinity.String() {
		case strconv.Itoa(res.CPU):
			if exclusive[res.CPU] {
				t.Errorf("two processes running at once pinned to CPU %d alone", res.CPU)
			}
			exclusive[res.CPU] = true
		case node.Usable.String():
			shared++
		default:
			t.Errorf("affinity %q: neither CPU %d nor node %d's CPUs %q", res.Affinity, res.CPU, res.Node, node.Usable)
		}
	}
	if shared < n {
		t.Errorf("%d of %d processes on %d CPUs got their node's CPUs, want at least %d", shared, 2*n, n, n)
	}
}

// Slots bound the processes alive at once, and queued requests start in
// the order Start was called.
func TestProcessSlotsBoundAndOrder(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	r := newTestRunner(t, rt, Config{Slots: 2})
	var ps []*Process
	for i := range 8 {
		slots := 1
		if i == 3 {
			slots = 5 // clamped to 2: runs alone
		}
		ps = append(ps, r.Start(context.Background(), Command{Args: sh("sleep 0.05"), Slots: slots}))
	}
	var rs []*Result
	for _, p := range ps {
		res := p.Wait()
		res.Close()
		if !res.Success() {
			t.Fatalf("err %v", res.Err)
		}
		rs = append(rs, res)
	}
	for i, a := range rs {
		// Slots held at a's start: a itself plus every task alive then.
		held := 1
		if i == 3 {
			held = 2
		}
		for j, b := range rs {
			if j != i && !b.Start.After(a.Start) && b.End.After(a.Start) {
				held++
				if j == 3 {
					held++
				}
			}
		}
		if held > 2 {
			t.Errorf("task %d started with %d slots held, more than 2", i, held)
		}
	}
	// FIFO: task 4 cannot start before task 3 (the 2-slot one) has.
	if rs[4].Start.Before(rs[3].Start) {
		t.Errorf("task 4 started before task 3, out of order")
	}
}

// Large output spills to a file, which Close removes.
func TestProcessOutputSpills(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	r := newTestRunner(t, rt, Config{OutputLimit: 1024, SpillDir: t.TempDir()})
	res := r.Run(context.Background(), Command{Args: sh("head -c 200000 /dev/zero; echo small >&2")})
	if !res.Success() {
		t.Fatalf("err %v", res.Err)
	}
	path := res.Stdout.SpillFile()
	if path == "" || res.Stderr.SpillFile() != "" {
		t.Fatalf("spill files %q %q, want stdout only", path, res.Stderr.SpillFile())
	}
	out, err := res.Stdout.Bytes()
	if err != nil || len(out) != 200000 || res.Stdout.Len() != 200000 {
		t.Fatalf("stdout: %d bytes (Len %d), err %v", len(out), res.Stdout.Len(), err)
	}
	tail, err := res.Stdout.Tail(10)
	if err != nil || len(tail) != 10 {
		t.Fatalf("Tail: %q %v", tail, err)
	}
	if err := res.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("spill file still there after Close: %v", err)
	}
}

func TestProcessRusage(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	r := newTestRunner(t, rt, Config{})
	res := r.Run(context.Background(), Command{Args: sh(`i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done`)})
	defer res.Close()
	if !res.Success() {
		t.Fatalf("err %v", res.Err)
	}
	if res.User+res.Sys <= 0 || res.Wall <= 0 {
		t.Fatalf("user %v sys %v wall %v, want CPU time", res.User, res.Sys, res.Wall)
	}
	if res.MaxRSS <= 0 {
		t.Errorf("MaxRSS %d, want the shell's resident set", res.MaxRSS)
	}
}

// Processes holding every slot do not hold the workers: Go tasks still
// run meanwhile, on a one-worker runtime, and the waiting costs no CPU.
func TestProcessWaitDoesNotBlockWorkers(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{Workers: 1})
	r := newTestRunner(t, rt, Config{Slots: 4})
	ctx, cancel := context.WithCancel(context.Background())
	var ps []*Process
	for range 4 {
		ps = append(ps, r.Start(ctx, Command{Args: sh("echo up; sleep 30")}))
	}
	for _, p := range ps {
		waitOutput(t, p)
	}
	ran := false
	if err := rt.Go(context.Background(), func(*runtime.Ctx) error { ran = true; return nil }).Wait(); err != nil || !ran {
		t.Fatalf("Go task: ran %v err %v", ran, err)
	}
	if used := r.SlotsUsed(); used != 4 {
		t.Fatalf("slots used %d while 4 processes sleep", used)
	}
	// Waiting for them burns no CPU: the waits sit in waitid(2). The same
	// allowance as runtime's TestIdleRuntimeUsesNoCPU, 4% of one CPU, for
	// the test process's own noise. The workers that ran the Go task park
	// within microseconds but at a time the test does not know, so it
	// looks at up to ten windows and needs one quiet one: a wait that
	// polled would burn CPU in every window.
	const idle = 500 * time.Millisecond
	var used []time.Duration
	for range 10 {
		before := cpuTime(t)
		time.Sleep(idle)
		if used = append(used, cpuTime(t)-before); used[len(used)-1] <= idle/25 {
			break
		}
	}
	if u := used[len(used)-1]; u > idle/25 {
		t.Errorf("waiting for 4 sleeping processes used %v of CPU in each window of %v", used, idle)
	}
	cancel()
	for _, p := range ps {
		if res := p.Wait(); res.Outcome != Canceled {
			t.Errorf("outcome %v, want canceled", res.Outcome)
		}
	}
	requireNoProcesses(t)
}

// Close under load: running and queued tasks each report exactly one
// outcome, and nothing is left running.
func TestProcessRunnerCloseUnderLoad(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	r := newTestRunner(t, rt, Config{Slots: 2, Grace: 200 * time.Millisecond})
	var ps []*Process
	for range 10 {
		ps = append(ps, r.Start(context.Background(), Command{Args: sh("echo up; sleep 30")}))
	}
	waitOutput(t, ps[0])
	waitOutput(t, ps[1])
	r.Close()
	for i, p := range ps {
		select {
		case <-p.Done():
		default:
			t.Fatalf("task %d has no result after Close", i)
		}
		res := p.Wait()
		if res.Outcome != Canceled || !errors.Is(res.Err, runtime.ErrClosed) {
			t.Errorf("task %d: outcome %v err %v, want canceled by runtime.ErrClosed", i, res.Outcome, res.Err)
		}
		if (i < 2) != (res.Pid > 0) {
			t.Errorf("task %d: pid %d", i, res.Pid)
		}
	}
	if res := r.Run(context.Background(), Command{Args: []string{"true"}}); res.Outcome != Canceled {
		t.Errorf("Run after Close: outcome %v", res.Outcome)
	}
	requireNoProcesses(t)
}

// Closing the runtime with Cancel kills the running processes too, and the
// queued ones never start.
func TestProcessRuntimeCloseCancel(t *testing.T) {
	rt, err := runtime.New(runtime.Config{CloseMode: runtime.Cancel})
	if err != nil {
		t.Fatal(err)
	}
	r := newTestRunner(t, rt, Config{Slots: 2, Grace: 200 * time.Millisecond})
	var ps []*Process
	for range 6 {
		ps = append(ps, r.Start(context.Background(), Command{Args: sh("echo up; sleep 30")}))
	}
	waitOutput(t, ps[0])
	waitOutput(t, ps[1])
	rt.Close()
	for i, p := range ps {
		res := p.Wait()
		if res.Outcome != Canceled {
			t.Errorf("task %d: outcome %v err %v, want canceled", i, res.Outcome, res.Err)
		}
	}
	requireNoProcesses(t)
}

// Many short tasks of every kind, some canceled at random: each reports
// exactly one outcome of the kind its command implies.
func TestProcessEveryTaskOneOutcome(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	r := newTestRunner(t, rt, Config{Grace: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	kinds := []struct {
		args []string
		want Outcome
	}{
		{[]string{"true"}, Succeeded},
		{[]string{"false"}, Failed},
		{[]string{"numasteal-no-such-program"}, Failed},
		{sh("kill -TERM $$"), Failed},
		{sh("sleep 0.01 & exit 0"), Succeeded},
	}
	const n = 60
	var ps []*Process
	for i := range n {
		c := context.Background()
		if i%7 == 3 {
			c = ctx
		}
		ps = append(ps, r.Start(c, Command{Args: kinds[i%len(kinds)].args}))
	}
	cancel()
	counts := map[Outcome]int{}
	for i, p := range ps {
		res := p.Wait()
		res.Close()
		counts[res.Outcome]++
		want := kinds[i%len(kinds)].want
		if res.Outcome != want && !(i%7 == 3 && res.Outcome == Canceled) {
			t.Errorf("task %d (%v): outcome %v err %v, want %v", i, res.Args, res.Outcome, res.Err, want)
		}
	}
	if total := counts[Succeeded] + counts[Failed] + counts[Canceled]; total != n {
		t.Fatalf("outcomes %v, want %d in all", counts, n)
	}
	requireNoProcesses(t)
}

// Starts racing with Close, from many goroutines: every Start yields
// exactly one result, canceled or not, and nothing is left running.
func TestProcessStartRacesClose(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	for round := range 5 {
		r := newTestRunner(t, rt, Config{Grace: 50 * time.Millisecond})
		results := make(chan *Result, 64)
		done := make(chan struct{})
		for g := range 8 {
			go func() {
				for i := range 8 {
					args := []string{"true"}
					if (g+i+round)%3 == 0 {
						args = sh("sleep 5")
					}
					results <- r.Start(context.Background(), Command{Args: args}).Wait()
				}
				done <- struct{}{}
			}()
		}
		time.Sleep(time.Duration(round) * 5 * time.Millisecond)
		r.Close()
		for range 8 {
			<-done
		}
		close(results)
		n := 0
		for res := range results {
			n++
			if res.Outcome != Succeeded && res.Outcome != Canceled {
				t.Errorf("round %d: outcome %v err %v", round, res.Outcome, res.Err)
			}
			res.Close()
		}
		if n != 64 {
			t.Fatalf("round %d: %d results for 64 starts", round, n)
		}
	}
	requireNoProcesses(t)
}

// The Admit, Prepare and Reaped hooks (for a make jobserver) are called
// once per task, in that order, and Prepare's changes reach the child.
func TestProcessHooks(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	var mu sync.Mutex
	admitted, released, prepared, reaped := 0, 0, 0, 0
	r := newTestRunner(t, rt, Config{
		Admit: func(ctx context.Context) (func(), error) {
			mu.Lock()
			defer mu.Unlock()
			admitted++
			if admitted == 3 {
				return nil, errors.New("no token")
			}
			return func() { mu.Lock(); released++; mu.Unlock() }, nil
		},
		Prepare: func(c *exec.Cmd) error {
			mu.Lock()
			defer mu.Unlock()
			prepared++
			c.Env = append(os.Environ(), "NS_HOOK=yes")
			if prepared == 2 {
				return errors.New("bad descriptors")
			}
			return nil
		},
		Reaped: func(c *exec.Cmd) {
			mu.Lock()
			defer mu.Unlock()
			if c.ProcessState == nil {
				t.Error("Reaped before the command was reaped")
			}
			reaped++
		},
	})
	var outs []string
	var errs []error
	for range 3 {
		res := r.Run(context.Background(), Command{Args: sh(`echo "$NS_HOOK"`)})
		out, _ := res.Stdout.Bytes()
		res.Close()
		outs, errs = append(outs, string(out)), append(errs, res.Err)
	}
	if outs[0] != "yes\n" || errs[0] != nil {
		t.Errorf("task 1: %q %v", outs[0], errs[0])
	}
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "bad descriptors") {
		t.Errorf("task 2 (Prepare fails): %v", errs[1])
	}
	if errs[2] == nil || errs[2].Error() != "no token" {
		t.Errorf("task 3 (Admit fails): %v", errs[2])
	}
	if admitted != 3 || released != 2 || prepared != 2 || reaped != 1 {
		t.Errorf("admitted %d released %d prepared %d reaped %d, want 3 2 2 1", admitted, released, prepared, reaped)
	}
}

// Concurrent processes spread over the CPUs: as many sleeping processes as
// workers land on as many different CPUs (the policy sees the processes).
func TestProcessPlacementSpreads(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	if rt.Workers() < 2 {
		t.Skip("one worker")
	}
	r := newTestRunner(t, rt, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	var ps []*Process
	for range rt.Workers() {
		p := r.Start(ctx, Command{Args: sh("echo up; sleep 30")})
		waitOutput(t, p) // one at a time: each placement sees the last
		ps = append(ps, p)
	}
	cancel()
	cpus := map[int]bool{}
	for _, p := range ps {
		res := p.Wait()
		res.Close()
		cpus[res.CPU] = true
	}
	if len(cpus) != rt.Workers() {
		t.Errorf("%d processes ran on CPUs %v, want all different", rt.Workers(), cpus)
	}
}

// Command.Started sees the task of a command that forked, while it runs,
// and is not called for one that could not start.
func TestProcessStartedHook(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	r := newTestRunner(t, rt, Config{})
	var pid int
	var running bool
	res := r.Run(context.Background(), Command{Args: sh(`sleep 0.01`), Started: func(st *supervise.Task) {
		pid = st.Pid()
		select {
		case <-st.Done():
		default:
			running = true
		}
	}})
	res.Close()
	if pid != res.Pid || !running || res.Outcome != Succeeded {
		t.Errorf("Started saw pid %d (running %v), the result %d (%v)", pid, running, res.Pid, res.Outcome)
	}
	called := false
	res = r.Run(context.Background(), Command{Args: []string{"/nonexistent/numasteal-prog"}, Started: func(*supervise.Task) { called = true }})
	res.Close()
	if called || res.Outcome != Failed {
		t.Errorf("Started called %v for a command that could not start (%v)", called, res.Outcome)
	}
}

// Queue takes the task's place in the slot queue at once: a task queued
// second and run first waits until the first has its slots, and each
// task's life runs in the goroutine that calls Run.
func TestProcessQueueOrder(t *testing.T) {
	rt := newTestRuntime(t, runtime.Config{})
	r := newTestRunner(t, rt, Config{Slots: 1})
	first := r.Queue(context.Background(), Command{Args: sh("sleep 0.05")})
	second := r.Queue(context.Background(), Command{Args: []string{"true"}})
	got := make(chan *Result)
	go func() { got <- second.Run() }()
	a := first.Run()
	b := <-got
	defer a.Close()
	defer b.Close()
	if !a.Success() || !b.Success() {
		t.Fatalf("first %v, second %v", a.Err, b.Err)
	}
	if b.Start.Before(a.End) {
		t.Errorf("the second task started at %v, before the first ended at %v", b.Start, a.End)
	}
}
