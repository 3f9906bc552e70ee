package memory

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// deadline bounds every wait of these tests: generous, as the machine is
// shared and -race is slow; the waits end as soon as their condition
// holds.
const deadline = 60 * time.Second

// eventually polls cond until it holds, failing the test after deadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for wait := time.Millisecond; !cond(); wait = min(2*wait, 20*time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("after %v: still not %s", deadline, what)
		}
		time.Sleep(wait)
	}
}

// procState returns the state letter of /proc/PID/stat ("R", "S", "T",
// "Z"), read by the test itself; "" when the process is gone.
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok || rest == "" {
		return ""
	}
	return rest[:1]
}

// allState reports whether every process of pids is in state (T: stopped)
// or, with not, none of them is.
func allState(pids []int, state string, not bool) bool {
	for _, p := range pids {
		if (procState(p) == state) == not {
			return false
		}
	}
	return true
}

// tree is a real process tree of a job: a shell and its children, in a
// process group of its own that the test kills when it ends.
type tree struct {
	cmd  *exec.Cmd
	pid  int
	pids []int // the shell and its children once they run
	done chan error
}

// startTree starts sh -c script and waits until the shell has n
// children or more.
func startTree(t testing.TB, script string, n int) *tree {
	t.Helper()
	c := exec.Command("sh", "-c", script)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	tr := &tree{cmd: c, pid: c.Process.Pid, done: make(chan error, 1)}
	go func() { tr.done <- c.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-tr.pid, syscall.SIGKILL)
		syscall.Kill(-tr.pid, syscall.SIGCONT)
		<-tr.done
	})
	eventually(t, "a tree of "+strconv.Itoa(n+1)+" processes", func() bool {
		tr.pids = Tree("/proc", tr.pid)
		return len(tr.pids) >= n+1
	})
	return tr
}

// TestTreeRSSAndSignalTree runs a real tree: its RSS is counted, and
// SignalTree stops and continues every process of it.
func TestTreeRSSAndSignalTree(t *testing.T) {
	tr := startTree(t, "sleep 100 & sleep 100 & wait", 2)
	if tr.pids[0] != tr.pid {
		t.Fatalf("Tree = %v; want the root %d first", tr.pids, tr.pid)
	}
	// The children run sleep once the shell's forks have exec'd.
	eventually(t, "the children running sleep", func() bool {
		for _, p := range tr.pids[1:] {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/comm")
			if strings.TrimSpace(string(b)) != "sleep" {
				return false
			}
		}
		return true
	})
	if len(tr.pids) != 3 {
		t.Fatalf("Tree = %v; want the shell and two sleeps", tr.pids)
	}
	if rss := TreeRSS("/proc", tr.pid); rss <= 0 {
		t.Errorf("TreeRSS = %d", rss)
	}
	one := TreeRSS("/proc", tr.pids[1])
	if all := TreeRSS("/proc", tr.pid); one <= 0 || all <= one {
		t.Errorf("TreeRSS of a sleep %d, of the tree %d", one, all)
	}

	if err := SignalTree("/proc", tr.pid, true); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every process of the tree stopped", func() bool { return allState(tr.pids, "T", false) })
	if err := SignalTree("/proc", tr.pid, false); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every process of the tree continued", func() bool { return allState(tr.pids, "T", true) })
}

// TestSignalTreeStopsLateChildren: a tree that keeps forking is stopped
// whole, children forked during the walk included.
func TestSignalTreeStopsLateChildren(t *testing.T) {
	tr := startTree(t, "i=0; while [ $i -lt 200 ]; do sleep 100 & i=$((i+1)); done; wait", 1)
	if err := SignalTree("/proc", tr.pid, true); err != nil {
		t.Fatal(err)
	}
	// A child forked as the shell was being stopped is stopped too: it
	// would run on forever.
	var stopped []int
	eventually(t, "every process of the forking tree stopped", func() bool {
		stopped = Tree("/proc", tr.pid)
		return allState(stopped, "T", false)
	})
	// Stopped, it forks no more.
	if again := Tree("/proc", tr.pid); len(again) != len(stopped) {
		t.Errorf("the stopped tree went from %d to %d processes", len(stopped), len(again))
	}
	if err := SignalTree("/proc", tr.pid, false); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the shell continued", func() bool { return procState(tr.pid) != "T" })
}

func TestTreeGone(t *testing.T) {
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	if got := Tree("/proc", pid); got != nil {
		t.Errorf("Tree of a reaped process = %v", got)
	}
	if got := TreeRSS("/proc", pid); got != 0 {
		t.Errorf("TreeRSS of a reaped process = %d", got)
	}
	if err := SignalTree("/proc", pid, true); err != nil {
		t.Errorf("SignalTree of a reaped process: %v", err)
	}
	if Tree("/proc", 0) != nil || Tree("/proc", -1) != nil || signalPending("/proc", 0) {
		t.Error("pid 0 or -1 gave a tree or a pending signal")
	}
}

// TestSignalPending: a stopped process keeps a SIGTERM pending, and
// signalPending sees it; continued, it dies of it.
func TestSignalPending(t *testing.T) {
	tr := startTree(t, "exec sleep 100", 0)
	syscall.Kill(tr.pid, syscall.SIGSTOP)
	eventually(t, "sleep stopped", func() bool { return procState(tr.pid) == "T" })
	if signalPending("/proc", tr.pid) {
		t.Fatal("a stopped process with no signal sent has one pending")
	}
	syscall.Kill(tr.pid, syscall.SIGTERM)
	eventually(t, "SIGTERM pending", func() bool { return signalPending("/proc", tr.pid) })
	if procState(tr.pid) != "T" {
		t.Fatalf("state %q; a stopped process stays stopped with SIGTERM pending", procState(tr.pid))
	}
	SignalTree("/proc", tr.pid, false)
	if err := <-tr.done; !diedOf(err, syscall.SIGTERM) {
		t.Errorf("continued, sleep ended with %v; want SIGTERM", err)
	}
	tr.done <- nil // for the cleanup
}

// diedOf reports whether err is an exit by signal sig.
func diedOf(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// TestTreeLeavesOutCaller: the calling process is never in a job's tree,
// even below the job's root (a daemon started by a build's first launcher
// is that launcher's child): Tree of this process's parent does not hold
// it, so that freezing the job never stops the caller.
func TestTreeLeavesOutCaller(t *testing.T) {
	for _, p := range Tree("/proc", os.Getppid()) {
		if p == os.Getpid() {
			t.Fatalf("Tree(parent) holds the calling process %d", p)
		}
	}
}
