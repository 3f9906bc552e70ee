//go:build linux

package supervise

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/internal/oomscore"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// sh returns a command running script under sh -c, with DIR set to dir.
func sh(dir, script string) *exec.Cmd {
	c := exec.Command("/bin/sh", "-c", script)
	c.Env = append(os.Environ(), "DIR="+dir)
	return c
}

// waitSignal is a shell fragment: wait until file $DIR/$1 exists.
const waitFor = `w() { while [ ! -e "$DIR/$1" ]; do sleep 0.01; done; }; `

// assertNoneLeft checks that nothing of task is alive and that this
// process has no zombie child left.
func assertNoneLeft(t *testing.T, task *Task) {
	t.Helper()
	if left := liveMarked(MarkerEnv + "=" + task.ID() + "\x00"); len(left) > 0 {
		t.Errorf("marked processes alive after the task ended: %+v", left)
	}
	eventually(t, "free of zombie children", func() bool { return len(zombieChildren()) == 0 })
	if c := task.Cgroup(); c != "" {
		if _, err := os.Stat(c); !os.IsNotExist(err) {
			t.Errorf("task cgroup %s left: %v", c, err)
		}
	}
}

// exitSignal returns the signal that ended the main child, or 0.
func exitSignal(err error) syscall.Signal {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return ws.Signal()
		}
	}
	return 0
}

func TestNormalEndKillsSetsidEscapee(t *testing.T) {
	modes(t, func(t *testing.T, o Options) {
		o.Subreaper = true
		s := newSup(t, o)
		dir := t.TempDir()
		// The escapee writes its pid, then sleeps in a session of its own;
		// the main child exits once the pid is written.
		task, err := s.Start(context.Background(), sh(dir, waitFor+
			`setsid sh -c 'echo $$ > "$DIR/p.tmp"; mv "$DIR/p.tmp" "$DIR/p"; exec sleep 1000' & w p; exit 0`))
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Wait(); err != nil {
			t.Fatalf("Wait = %v, want nil", err)
		}
		if c := task.Cause(); c != nil {
			t.Errorf("Cause = %v, want nil", c)
		}
		requireGone(t, task, dir, "setsid escapee")
	})
}

// requireGone checks, once task has ended, that the process whose pid the
// task wrote to dir/p (what names it) is gone, and nothing of task is left.
func requireGone(t *testing.T, task *Task, dir, what string) {
	t.Helper()
	pid, _ := strconv.Atoi(waitFile(t, filepath.Join(dir, "p")))
	if alive(pid) {
		t.Errorf("%s %d alive after the task ended", what, pid)
	}
	assertNoneLeft(t, task)
}

// Without a cgroup, with Subreaper, a task that leaves nothing behind
// ends without a /proc scan (leftNothing): an orphan of another task,
// carrying that task's marker in a session of its own, does not make it
// scan, nor is it touched; the orphan of the task itself does, and its
// end kills it.
func TestLeftNothingWithOrphans(t *testing.T) {
	o := Options{NoCgroup: true, Subreaper: true, Grace: 200 * time.Millisecond}
	s := newSup(t, o)
	dir := t.TempDir()
	// b's main child leaves an escapee and exits; b's monitor is not run
	// yet, so the escapee lives on as an orphan of this process.
	b, err := s.StartUnmonitored(context.Background(), sh(dir, waitFor+
		`setsid sh -c 'echo $$ > "$DIR/p.tmp"; mv "$DIR/p.tmp" "$DIR/p"; exec sleep 1000' & w p; exit 0`), nil)
	if err != nil {
		t.Fatal(err)
	}
	escapee, _ := strconv.Atoi(waitFile(t, filepath.Join(dir, "p")))
	eventually(t, "the escapee reparented here", func() bool {
		p, ok := readStat(escapee)
		return ok && p.ppid == os.Getpid()
	})
	if s.leftNothing(b) {
		t.Errorf("leftNothing of the task whose orphan %d runs: true", escapee)
	}
	c, err := s.Start(context.Background(), exec.Command("true"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatal(err)
	}
	if !s.leftNothing(c) {
		t.Errorf("leftNothing of a task that left nothing, beside another task's orphan: false")
	}
	if !alive(escapee) {
		t.Errorf("another task's orphan %d ended by this task's end", escapee)
	}
	b.Monitor()
	if alive(escapee) {
		t.Errorf("orphan %d alive after its task ended", escapee)
	}
	assertNoneLeft(t, b)
}

func TestBackgroundJobOfSetM(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash for set -m")
	}
	modes(t, func(t *testing.T, o Options) {
		o.Subreaper = true
		s := newSup(t, o)
		dir := t.TempDir()
		c := exec.Command("bash", "-c", `set -m; sleep 1000 & echo $! > "$DIR/p.tmp"; mv "$DIR/p.tmp" "$DIR/p"; exit 0`)
		c.Env = append(os.Environ(), "DIR="+dir)
		task, err := s.Start(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Wait(); err != nil {
			t.Fatalf("Wait = %v", err)
		}
		requireGone(t, task, dir, "set -m job")
	})
}

func TestIgnoredSIGTERMGetsSIGKILLAfterGrace(t *testing.T) {
	modes(t, func(t *testing.T, o Options) {
		o.Grace = 300 * time.Millisecond
		s := newSup(t, o)
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		task, err := s.Start(ctx, sh(dir, `trap '' TERM; touch "$DIR/ready"; while :; do sleep 0.05; done`))
		if err != nil {
			t.Fatal(err)
		}
		waitFile(t, filepath.Join(dir, "ready"))
		start := time.Now()
		cancel()
		err = task.Wait()
		if took := time.Since(start); took < o.Grace {
			t.Errorf("ended after %v, before the grace %v", took, o.Grace)
		}
		if sig := exitSignal(err); sig != syscall.SIGKILL {
			t.Errorf("Wait = %v, want death by SIGKILL", err)
		}
		if c := task.Cause(); !errors.Is(c, context.Canceled) {
			t.Errorf("Cause = %v, want context.Canceled", c)
		}
		assertNoneLeft(t, task)
	})
}

func TestKillAtOnce(t *testing.T) {
	modes(t, func(t *testing.T, o Options) {
		o.Grace = time.Hour // Kill must cut it short
		s := newSup(t, o)
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var tasks []*Task
		for i := range 2 {
			task, err := s.Start(ctx, sh(dir, fmt.Sprintf(`trap '' TERM; touch "$DIR/r%d"; while :; do sleep 0.05; done`, i)))
			if err != nil {
				t.Fatal(err)
			}
			tasks = append(tasks, task)
			waitFile(t, filepath.Join(dir, fmt.Sprint("r", i)))
		}
		cancel()        // the first interrupt: SIGTERM, ignored
		tasks[0].Kill() // the second, for one task
		s.KillAll()     // and for all
		for _, task := range tasks {
			select {
			case <-task.Done():
			case <-time.After(deadline):
				t.Fatalf("task %s still running %v after Kill", task.ID(), deadline)
			}
			if sig := exitSignal(task.Wait()); sig != syscall.SIGKILL {
				t.Errorf("Wait = %v, want death by SIGKILL", task.Wait())
			}
			assertNoneLeft(t, task)
		}
	})
}

func TestCancelTreeThreeDeep(t *testing.T) {
	modes(t, func(t *testing.T, o Options) {
		o.Subreaper = true
		s := newSup(t, o)
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		task, err := s.Start(ctx, sh(dir, `sh -c 'sh -c "touch \"\$DIR/deep\"; sleep 1000" & wait' & wait`))
		if err != nil {
			t.Fatal(err)
		}
		waitFile(t, filepath.Join(dir, "deep"))
		prefix := MarkerEnv + "=" + task.ID() + "\x00"
		eventually(t, "4 marked processes (3 shells, 1 sleep)", func() bool { return len(liveMarked(prefix)) >= 4 })
		cancel()
		task.Wait()
		if c := task.Cause(); !errors.Is(c, context.Canceled) {
			t.Errorf("Cause = %v, want context.Canceled", c)
		}
		assertNoneLeft(t, task)
	})
}

func TestTimeout(t *testing.T) {
	s := newSup(t, Options{NoCgroup: true, Grace: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	task, err := s.Start(ctx, exec.Command("sleep", "1000"))
	if err != nil {
		t.Fatal(err)
	}
	task.Wait()
	if c := task.Cause(); !errors.Is(c, context.DeadlineExceeded) {
		t.Errorf("Cause = %v, want DeadlineExceeded", c)
	}
	assertNoneLeft(t, task)
}

func TestStopContinue(t *testing.T) {
	modes(t, func(t *testing.T, o Options) {
		s := newSup(t, o)
		checkStopContinue(t, s, func(*Task) string { return s.Mechanisms().Cgroup }, func(_ *Task, stop bool) error {
			if stop {
				return s.StopTasks()
			}
			return s.ContinueTasks()
		})
	})
}

// Task.Stop stops and continues one task whole, its escapee included, as
// StopTasks does all of them.
func TestTaskStop(t *testing.T) {
	modes(t, func(t *testing.T, o Options) {
		s := newSup(t, o)
		checkStopContinue(t, s, func(task *Task) string { return task.Cgroup() }, (*Task).Stop)
	})
}

// checkStopContinue starts a task with an escapee, stops it with stop, sees
// every process of it stopped (or the cgroup cgroupOf names frozen), continues
// it and sees it run again.
func checkStopContinue(t *testing.T, s *Supervisor, cgroupOf func(*Task) string, stop func(*Task, bool) error) {
	dir := t.TempDir()
	task, err := s.Start(context.Background(), sh(dir, `setsid sh -c 'while :; do sleep 0.05; done' & touch "$DIR/ready"; while :; do sleep 0.05; done`))
	if err != nil {
		t.Fatal(err)
	}
	defer task.Kill()
	waitFile(t, filepath.Join(dir, "ready"))
	prefix := MarkerEnv + "=" + task.ID() + "\x00"
	eventually(t, "escapee started", func() bool { return len(liveMarked(prefix)) >= 3 })
	if err := stop(task, true); err != nil {
		t.Fatal(err)
	}
	// D as well as T: dash starts commands with vfork, and a parent
	// whose vfork child was stopped before its exec waits in D (with
	// its own SIGSTOP pending) until the child is continued.
	stopped := func(p testProc) bool { return p.state == "T" || p.state == "D" }
	c := cgroupOf(task)
	if c != "" {
		// A frozen process sleeps in the freezer (state S), so the
		// cgroup's own report is the test, then that nothing runs.
		eventually(t, "cgroup frozen", func() bool {
			b, _ := os.ReadFile(filepath.Join(c, "cgroup.events"))
			return strings.Contains(string(b), "frozen 1")
		})
		stopped = func(p testProc) bool { return p.state == "S" || p.state == "D" }
	}
	var ps []testProc
	defer func() {
		if t.Failed() {
			t.Logf("marked processes: %+v", ps)
		}
	}()
	eventually(t, "every marked process stopped", func() bool {
		ps = liveMarked(prefix)
		for _, p := range ps {
			if !stopped(p) {
				return false
			}
		}
		return len(ps) >= 2
	})
	if err := stop(task, false); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no marked process stopped", func() bool {
		for _, p := range liveMarked(prefix) {
			if p.state == "T" {
				return false
			}
		}
		return true
	})
	if c != "" {
		eventually(t, "cgroup thawed", func() bool {
			b, _ := os.ReadFile(filepath.Join(c, "cgroup.events"))
			return strings.Contains(string(b), "frozen 0")
		})
	}
	// Running again: the loop makes new sleeps.
	before := liveMarked(prefix)
	eventually(t, "a new process after continue", func() bool {
		for _, p := range liveMarked(prefix) {
			if !containsPid(before, p.pid) {
				return true
			}
		}
		return false
	})
	task.Terminate()
	task.Wait()
	assertNoneLeft(t, task)
}

func containsPid(ps []testProc, pid int) bool {
	for _, p := range ps {
		if p.pid == pid {
			return true
		}
	}
	return false
}

func TestReaperReapsEscapeesMidRun(t *testing.T) {
	modes(t, func(t *testing.T, o Options) {
		o.Subreaper = true
		s := newSup(t, o)
		dir := t.TempDir()
		// Two orphans (their subshell exits at once), reparented to us,
		// exit when told to while the main child keeps running.
		task, err := s.Start(context.Background(), sh(dir, waitFor+
			`for i in 1 2; do (setsid sh -c 'echo $$ > "$DIR/p$0.tmp"; mv "$DIR/p$0.tmp" "$DIR/p$0"; `+waitFor+`w go' $i &); done; `+
			`touch "$DIR/ready"; while :; do sleep 0.05; done`))
		if err != nil {
			t.Fatal(err)
		}
		defer task.Kill()
		waitFile(t, filepath.Join(dir, "ready"))
		var pids []int
		for _, f := range []string{"p1", "p2"} {
			pid, _ := strconv.Atoi(waitFile(t, filepath.Join(dir, f)))
			pids = append(pids, pid)
			eventually(t, fmt.Sprintf("orphan %d reparented here", pid), func() bool {
				p, ok := statOf("/proc/" + strconv.Itoa(pid))
				return ok && p.ppid == os.Getpid()
			})
		}
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, pid := range pids {
			eventually(t, fmt.Sprintf("orphan %d reaped", pid), func() bool {
				_, err := os.Stat("/proc/" + strconv.Itoa(pid))
				return os.IsNotExist(err)
			})
		}
		if z := zombieChildren(); len(z) > 0 {
			t.Errorf("zombie children mid-run: %v", z)
		}
		select {
		case <-task.Exited():
			t.Fatal("the main child exited; the test wants it running")
		default:
		}
		task.Terminate()
		task.Wait()
		assertNoneLeft(t, task)
	})
}

// helperEnv makes the test binary run runHelper: a supervisor with a
// watchdog that TestSupervisorSIGKILLed kills.
const helperEnv = "SUPERVISE_TEST_HELPER"

// runHelper starts a run (RunID, cgroup or not, from the environment)
// with a watchdog that holds the token pipe at fd 3, a 3-deep tree, a
// setsid escapee and a temp file, says "ready" on stdout, and waits to be
// killed.
func runHelper() int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "helper:", err); return 1 }
	exe, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	unix.CloseOnExec(3)
	mode := os.Getenv(helperEnv)
	o := Options{
		RunID:          os.Getenv("SUPERVISE_TEST_RUN"),
		NoCgroup:       mode != "cgroup" && mode != "memcg",
		Subreaper:      true,
		Watchdog:       exe,
		WatchdogTokens: os.NewFile(3, "tokens"),
	}
	switch mode {
	case "nowatchdog":
		o.Watchdog, o.WatchdogTokens = "", nil
	case "memcg":
		o.TaskMemoryLimit = 256 << 20
	}
	s, err := New(o)
	if err != nil {
		return fail(err)
	}
	dir := os.Getenv("DIR")
	for i, script := range []string{
		`echo $$ > "$DIR/main0"; sh -c 'sh -c "touch \"\$DIR/deep\"; sleep 1000" & wait' & wait`,
		`echo $$ > "$DIR/main1"; setsid sh -c 'touch "$DIR/escaped"; exec sleep 1000' & wait`,
	} {
		if os.Getenv(helperHereEnv) != "" {
			if err := startHereMonitored(s, sh(dir, script)); err != nil {
				return fail(fmt.Errorf("task %d: %w", i, err))
			}
			continue
		}
		if _, err := s.Start(context.Background(), sh(dir, script)); err != nil {
			return fail(fmt.Errorf("task %d: %w", i, err))
		}
	}
	tmp := filepath.Join(dir, "spill")
	if err := os.WriteFile(tmp, []byte("x"), 0o644); err != nil {
		return fail(err)
	}
	s.TempPath(tmp)
	s.SetTokens(1)
	s.SetTokens(3)
	for _, f := range []string{"deep", "escaped", "main0", "main1"} {
		for {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	m := s.Mechanisms()
	fmt.Printf("ready %q %q %q\n", m.Cgroup, m.TaskMemory.Dir, m.NoTaskMemoryReason)
	select {} // until SIGKILL
}

func TestSupervisorSIGKILLed(t *testing.T) {
	for _, mode := range []string{"cgroup", "nocgroup", "memcg"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			run := fmt.Sprintf("test-%d-%s", os.Getpid(), mode)
			tokR, tokW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer tokR.Close()
			exe, _ := os.Executable()
			h := exec.Command(exe, "-test.run=^$")
			h.Env = append(os.Environ(), helperEnv+"="+mode, "SUPERVISE_TEST_RUN="+run, "DIR="+dir)
			h.ExtraFiles = []*os.File{tokW}
			h.Stderr = os.Stderr
			out, err := h.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Start(); err != nil {
				t.Fatal(err)
			}
			tokW.Close()
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				h.Process.Kill()
				h.Wait()
				t.Fatalf("helper: %q, %v", line, err)
			}
			var cg, memcg, why string
			if _, err := fmt.Sscanf(line, "ready %q %q %q", &cg, &memcg, &why); err != nil {
				h.Process.Kill()
				h.Wait()
				t.Fatalf("helper: %q: %v", line, err)
			}
			if mode == "cgroup" && cg == "" {
				h.Process.Kill()
				h.Wait()
				t.Skip("no usable cgroup v2 in the helper")
			}
			if mode == "memcg" && memcg == "" {
				h.Process.Kill()
				h.Wait()
				skipNoTaskMemory(t, why)
			}
			prefix := MarkerEnv + "=" + run + "."
			if n := len(liveMarked(prefix)); n < 5 {
				t.Errorf("%d marked processes before the kill, want at least 5", n)
			}

			killed := time.Now()
			if err := h.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			h.Wait()
			eventually(t, "no marked process alive", func() bool { return len(liveMarked(prefix)) == 0 })
			t.Logf("every marked process gone %v after the SIGKILL", time.Since(killed))
			eventually(t, "temp file removed", func() bool {
				_, err := os.Stat(filepath.Join(dir, "spill"))
				return os.IsNotExist(err)
			})
			for _, dir := range []string{cg, memcg} {
				if dir != "" {
					eventually(t, "run cgroup and tasks' memory cgroup removed", func() bool {
						_, err := os.Stat(dir)
						return os.IsNotExist(err)
					})
				}
			}
			tokR.SetReadDeadline(time.Now().Add(deadline))
			got, err := io.ReadAll(tokR) // EOF once the watchdog has exited
			if string(got) != "+++" || err != nil {
				t.Errorf("tokens written back: %q, %v; want \"+++\"", got, err)
			}
			// Orphans of the helper (the watchdog, the tasks' zombies) come
			// here when this process is a subreaper (other tests made it
			// one): reap them.
			eventually(t, "the helper's orphans reaped", func() bool {
				for {
					var ws unix.WaitStatus
					pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
					if err != nil {
						return true // ECHILD
					}
					if pid == 0 {
						return false
					}
				}
			})
		})
	}
}

// cpusAllowed returns the Cpus_allowed_list line of /proc/PID/status.
func cpusAllowed(t *testing.T, pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("no Cpus_allowed_list")
	return ""
}

func TestStartPlacedThenUnplaced(t *testing.T) {
	all, err := affinity.Allowed()
	if err != nil {
		t.Skip(err)
	}
	s := newSup(t, Options{NoCgroup: true})
	one := cpuset.Of(all.Last())
	placed, err := s.StartPlaced(context.Background(), exec.Command("sleep", "1000"), affinity.Placement{CPUs: one})
	if err != nil {
		t.Fatal(err)
	}
	defer placed.Kill()
	if got := cpusAllowed(t, placed.Pid()); got != one.String() {
		t.Errorf("placed child allowed %s, want %s", got, one)
	}
	// The kept thread is put back: the next child gets the whole mask.
	plain, err := s.Start(context.Background(), exec.Command("sleep", "1000"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Kill()
	if got := cpusAllowed(t, plain.Pid()); got != all.String() {
		t.Errorf("unplaced child allowed %s, want %s", got, all)
	}
	if _, err := s.StartPlaced(context.Background(), exec.Command("true"), affinity.Placement{}); !errors.Is(err, affinity.ErrEmptySet) {
		t.Errorf("StartPlaced with no CPUs: %v, want ErrEmptySet", err)
	}
}

func TestStartAfterClose(t *testing.T) {
	s, err := New(Options{NoCgroup: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := s.Start(context.Background(), exec.Command("true")); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestPdeathsigWithoutWatchdog: with no watchdog, a SIGKILLed supervisor
// still takes its direct children along (Pdeathsig from the kept fork
// thread); its grandchildren survive, as doc.go says, and the test kills
// them.
func TestPdeathsigWithoutWatchdog(t *testing.T) {
	dir := t.TempDir()
	run := fmt.Sprintf("test-%d-pdeathsig", os.Getpid())
	tokR, tokW, err := os.Pipe() // unused: fd 3 must exist
	if err != nil {
		t.Fatal(err)
	}
	defer tokR.Close()
	exe, _ := os.Executable()
	h := exec.Command(exe, "-test.run=^$")
	h.Env = append(os.Environ(), helperEnv+"=nowatchdog", "SUPERVISE_TEST_RUN="+run, "DIR="+dir)
	h.ExtraFiles = []*os.File{tokW}
	h.Stderr = os.Stderr
	out, err := h.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	tokW.Close()
	prefix := MarkerEnv + "=" + run + "."
	defer func() {
		for _, p := range liveMarked(prefix) {
			syscall.Kill(p.pid, syscall.SIGKILL)
		}
		eventually(t, "grandchildren killed and reaped", func() bool {
			for {
				var ws unix.WaitStatus
				pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
				if err != nil {
					return len(liveMarked(prefix)) == 0
				}
				if pid == 0 {
					return false
				}
			}
		})
	}()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		h.Process.Kill()
		h.Wait()
		t.Fatalf("helper: %q, %v", line, err)
	}
	var mains []int
	for _, f := range []string{"main0", "main1"} {
		pid, _ := strconv.Atoi(waitFile(t, filepath.Join(dir, f)))
		mains = append(mains, pid)
	}
	h.Process.Signal(syscall.SIGKILL)
	h.Wait()
	for _, pid := range mains {
		eventually(t, fmt.Sprintf("direct child %d dead by Pdeathsig", pid), func() bool { return !alive(pid) })
	}
	if n := len(liveMarked(prefix)); n == 0 {
		t.Errorf("no grandchild survived; without a watchdog some should (is a watchdog running?)")
	}
}

// StartHere forks from the calling goroutine's thread: a placed child
// starts with the placement's mask, which the thread keeps until Monitor
// returns and then gets its own back (at once when the start fails); the
// blocking wait of its Monitor ends when the child exits, and is
// interrupted by Terminate, Kill and the end of ctx, each with its cause.
func TestStartHere(t *testing.T) {
	all, err := affinity.Allowed()
	if err != nil {
		t.Skip(err)
	}
	modes(t, func(t *testing.T, o Options) {
		// Locked here too, so that the thread the masks are read from
		// stays this goroutine's after Monitor unlocks StartHere's lock.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		o.Subreaper = true
		s := newSup(t, o)
		dir := t.TempDir()
		one := cpuset.Of(all.Last())
		task, err := s.StartHere(context.Background(), sh(dir, "exit 3"), &affinity.Placement{CPUs: one})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := affinity.Allowed(); err != nil || !got.Equal(one) {
			t.Errorf("the forking thread is allowed %s (%v) while its child runs, want %s", got, err, one)
		}
		task.Monitor()
		if got, err := affinity.Allowed(); err != nil || !got.Equal(all) {
			t.Errorf("the forking thread is allowed %s (%v) after Monitor, want %s", got, err, all)
		}
		var ee *exec.ExitError
		if err := task.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("Wait: %v, want exit status 3", err)
		}
		if task.Cause() != nil {
			t.Errorf("Cause %v, want nil", task.Cause())
		}
		assertNoneLeft(t, task)

		placed, err := s.StartHere(context.Background(), exec.Command("sleep", "1000"), &affinity.Placement{CPUs: one})
		if err != nil {
			t.Fatal(err)
		}
		if got := cpusAllowed(t, placed.Pid()); got != one.String() {
			t.Errorf("placed child allowed %s, want %s", got, one)
		}
		placed.Kill()
		placed.Monitor()
		if !errors.Is(placed.Cause(), ErrKilled) || exitSignal(placed.Wait()) != syscall.SIGKILL {
			t.Errorf("killed: cause %v, wait %v", placed.Cause(), placed.Wait())
		}

		ctx, cancel := context.WithCancelCause(context.Background())
		stop := errors.New("stop")
		for _, end := range []func(*Task){
			(*Task).Terminate,
			(*Task).Kill,
			func(*Task) { cancel(stop) },
		} {
			task, err := s.StartHere(ctx, exec.Command("sleep", "1000"), nil)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				end(task) // while Monitor waits, or before
			}()
			task.Monitor()
			<-done
			switch c := task.Cause(); {
			case errors.Is(c, ErrTerminated), errors.Is(c, ErrKilled), errors.Is(c, stop):
			default:
				t.Errorf("cause %v, want the end's", c)
			}
			task.Terminate() // after the end: nothing happens
			assertNoneLeft(t, task)
		}
		if _, err := s.StartHere(context.Background(), exec.Command("true"), &affinity.Placement{}); !errors.Is(err, affinity.ErrEmptySet) {
			t.Errorf("StartHere with no CPUs: %v, want ErrEmptySet", err)
		}
		if _, err := s.StartHere(context.Background(), exec.Command("/nonexistent/program"), nil); err == nil {
			t.Errorf("StartHere of a missing program: no error")
		}
		if _, err := s.StartHere(context.Background(), exec.Command("/nonexistent/program"), &affinity.Placement{CPUs: one}); err == nil {
			t.Errorf("placed StartHere of a missing program: no error")
		}
		if got, err := affinity.Allowed(); err != nil || !got.Equal(all) {
			t.Errorf("the forking thread is allowed %s (%v) after a failed placed start, want %s", got, err, all)
		}
	})
}

// StartHere's polls share idle eventfds: a task that ends by itself gives
// its eventfd back for the next, and one that was interrupted (written)
// is closed, never handed to a later task, whose wait it would cut short.
func TestStartHereWakeReuse(t *testing.T) {
	modes(t, func(t *testing.T, o Options) {
		s := newSup(t, o)
		dir := t.TempDir()
		idle := func() int {
			n := 0
			s.wakes.Drain(func(fd int) { n++; s.wakes.Push(fd) })
			return n
		}
		run := func(script string, end func(*Task)) *Task {
			t.Helper()
			task, err := s.StartHere(context.Background(), sh(dir, script), nil)
			if err != nil {
				t.Fatal(err)
			}
			if end != nil {
				end(task)
			}
			task.Monitor()
			return task
		}
		for i := range 3 {
			run("exit 0", nil)
			if n := idle(); n != 1 {
				t.Fatalf("after clean task %d: %d idle eventfds, want 1", i+1, n)
			}
		}
		if task := run("sleep 30", (*Task).Terminate); !errors.Is(task.Cause(), ErrTerminated) {
			t.Fatalf("terminated task: cause %v", task.Cause())
		}
		if n := idle(); n != 0 {
			t.Errorf("after an interrupted task: %d idle eventfds, want 0 (its eventfd was written)", n)
		}
		// A task that exits by itself after a moment is not cut short.
		task := run("sleep 0.2; exit 3", nil)
		var ee *exec.ExitError
		if err := task.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 || task.Cause() != nil {
			t.Errorf("task after the interrupted one: wait %v, cause %v; want exit status 3, no cause", err, task.Cause())
		}
	})
}

// helperHereEnv makes runHelper start its tasks with StartHere, each from
// a goroutine of its own that then monitors it.
const helperHereEnv = "SUPERVISE_TEST_HELPER_HERE"

// startHereMonitored starts cmd with StartHere in a new goroutine, which
// then runs the task's Monitor, and returns the start's error.
func startHereMonitored(s *Supervisor, cmd *exec.Cmd) error {
	started := make(chan error, 1)
	go func() {
		task, err := s.StartHere(context.Background(), cmd, nil)
		started <- err
		if err == nil {
			task.Monitor()
		}
	}()
	return <-started
}

// TestPdeathsigStartHere is TestPdeathsigWithoutWatchdog with the helper's
// tasks forked by StartHere: the locked threads that forked them and wait
// for them give them their Pdeathsig when the helper is SIGKILLed.
func TestPdeathsigStartHere(t *testing.T) {
	t.Setenv(helperHereEnv, "1")
	TestPdeathsigWithoutWatchdog(t)
}

// TestSupervisorSIGKILLedStartHere is TestSupervisorSIGKILLed with the
// helper's tasks forked by StartHere.
func TestSupervisorSIGKILLedStartHere(t *testing.T) {
	t.Setenv(helperHereEnv, "1")
	TestSupervisorSIGKILLed(t)
}

// Tasks started with StartHere at once from goroutines of their own, each
// ended its own way (it exits, leaves a background job, is terminated
// before its Monitor runs, is killed while it runs), end whole.
func TestStartHereStress(t *testing.T) {
	modes(t, func(t *testing.T, o Options) {
		o.Subreaper = true
		s := newSup(t, o)
		dir := t.TempDir()
		ways := []struct {
			script string
			end    func(*Task) // before Monitor
		}{
			{"true", nil},
			{"sleep 30 & echo left", nil},
			{"sleep 30", (*Task).Terminate},
			{"sleep 30", func(task *Task) { go task.Kill() }},
		}
		tasks := make([]*Task, 32)
		inParallel(len(tasks), func(i int) {
			way := ways[i%len(ways)]
			task, err := s.StartHere(context.Background(), sh(dir, way.script), nil)
			if err != nil {
				t.Errorf("task %d: %v", i, err)
				return
			}
			if tasks[i] = task; way.end != nil {
				way.end(task)
			}
			task.Monitor()
		})
		for _, task := range tasks {
			if task != nil {
				assertNoneLeft(t, task)
			}
		}
	})
}

// inParallel calls f(0) to f(n-1), each in a goroutine of its own, and
// returns when all have returned.
func inParallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
}

// Options.OOMScoreAdj raises each task's process, however it is started,
// and never lowers what this process's children inherit.
func TestOOMScoreAdj(t *testing.T) {
	for _, bad := range []int{-1, 1001} {
		if s, err := New(Options{NoCgroup: true, OOMScoreAdj: bad}); err == nil {
			s.Close()
			t.Errorf("New with OOMScoreAdj %d succeeded", bad)
		}
	}
	own, err := oomscore.Get(0)
	if err != nil {
		t.Skip("SKIP: ", err)
	}
	if own >= 1000 {
		t.Skipf("SKIP: this process runs at oom_score_adj %d already; nothing to raise", own)
	}
	adjOf := func(task *Task) int {
		t.Helper()
		v, err := oomscore.Get(task.Pid())
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	all, err := affinity.Allowed()
	if err != nil {
		t.Skip("SKIP: ", err)
	}
	want := max(own+1, oomscore.Task)
	modes(t, func(t *testing.T, o Options) {
		o.OOMScoreAdj = want
		s := newSup(t, o)
		ctx := context.Background()
		starts := map[string]func() (*Task, error){
			"Start": func() (*Task, error) { return s.Start(ctx, exec.Command("sleep", "1000")) },
			"StartPlaced": func() (*Task, error) {
				return s.StartPlaced(ctx, exec.Command("sleep", "1000"), affinity.Placement{CPUs: cpuset.Of(all.Last())})
			},
			"StartHere": func() (*Task, error) { return s.StartHere(ctx, exec.Command("sleep", "1000"), nil) },
		}
		for name, start := range starts {
			task, err := start()
			if err != nil {
				t.Fatal(name, err)
			}
			if got := adjOf(task); got != want {
				t.Errorf("%s: the task's oom_score_adj is %d, want %d", name, got, want)
			}
			task.Kill()
			if name == "StartHere" {
				task.Monitor()
			}
			task.Wait()
		}
	})
}

// oomHighEnv marks the run of this test binary that TestOOMScoreAdjNeverLowers
// starts at oom_score_adj 900.
const oomHighEnv = "NUMASTEAL_TEST_OOM_HIGH"

// A Supervisor never lowers what its tasks inherit: in a process at 900,
// OOMScoreAdj 500 leaves them at 900. The test runs itself again at 900
// (raising needs no privilege), which this process cannot come back from
// without one.
func TestOOMScoreAdjNeverLowers(t *testing.T) {
	if os.Getenv(oomHighEnv) == "" {
		if own, err := oomscore.Get(0); err != nil || own >= 900 {
			t.Skipf("SKIP: this process's oom_score_adj is %d (%v)", own, err)
		}
		cmd := exec.Command("sh", "-c", `echo 900 > /proc/self/oom_score_adj && exec "$0" -test.run='^TestOOMScoreAdjNeverLowers$' -test.v`, os.Args[0])
		cmd.Env = append(os.Environ(), oomHighEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestOOMScoreAdjNeverLowers") {
			t.Fatalf("the run at oom_score_adj 900: %v\n%s", err, out)
		}
		return
	}
	if own, err := oomscore.Get(0); err != nil || own != 900 {
		t.Fatalf("this run's oom_score_adj is %d (%v), want 900", own, err)
	}
	s := newSup(t, Options{NoCgroup: true, OOMScoreAdj: oomscore.Task})
	task, err := s.Start(context.Background(), exec.Command("sleep", "1000"))
	if err != nil {
		t.Fatal(err)
	}
	defer task.Wait()
	defer task.Kill()
	if got, err := oomscore.Get(task.Pid()); err != nil || got != 900 {
		t.Errorf("OOMScoreAdj %d below this process's 900: the task has %d (%v), want 900", oomscore.Task, got, err)
	}
}
