package main

import (
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

	"github.com/numasteal/numasteal/internal/memtest"
	"github.com/numasteal/numasteal/internal/oomscore"
	"github.com/numasteal/numasteal/launch/daemon"
)

// TestMemoryBudget: eight "links" of 100 MiB each under a 300 MiB budget
// with make -j8 (800 MiB at once unchecked). The first build learns their
// peak RSS (each first guess, 1 GiB, is clamped to the budget: they run
// one at a time); in the second, the MiB of the links running at once
// never exceed the budget, and the build completes.
func TestMemoryBudget(t *testing.T) {
	need(t, "make")
	const links, mb, budget = 8, 100, 300
	e := newEnv(t, fmt.Sprintf("--mem %dM --slots 8", budget))
	dir := t.TempDir()
	exe, _ := os.Executable()
	var targets []string
	for i := range links {
		targets = append(targets, fmt.Sprintf("l%d", i))
	}
	mk := "all: " + strings.Join(targets, " ") + "\nl%:\n\t$(LINK) -o $@\n"
	os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644)
	counter := filepath.Join(dir, "counter")
	for round := 1; round <= 2; round++ {
		os.Remove(counter)
		for _, tg := range targets {
			os.Remove(filepath.Join(dir, tg))
		}
		c := e.cmd(dir, "make", "-j8", "LINK="+e.launcher()+" "+exe)
		c.Env = append(c.Env, "NUMASTEAL_TEST_HELPER=touch", fmt.Sprintf("MB=%d", mb), "COUNTER="+counter)
		run(t, c)
		var cur, peak int
		b, _ := os.ReadFile(counter)
		fmt.Sscanf(string(b), "%d %d", &cur, &peak)
		t.Logf("build %d: at most %d MiB of links at once (budget %d MiB)", round, peak, budget)
		if peak > budget {
			t.Errorf("build %d: %d MiB of links ran at once, budget %d MiB", round, peak, budget)
		}
	}
}

// TestMemoryLimitedBuild: make -j of compiles that each need more than
// half of the build's memory-limited cgroup (plain make -j2 is OOM-killed:
// internal/memtest's TestPlainMakeIsOOMKilled) completes through the
// launcher, on the first run (no peak learned: the daemon freezes the
// newest compile when memory runs out and reruns one the kernel killed)
// and on the second (learned), with every object built and make seeing
// no failure.
func TestMemoryLimitedBuild(t *testing.T) {
	testMemoryLimitedBuild(t, false)
}

// TestMemoryLimitedBuildExec is TestMemoryLimitedBuild started the
// README's way, numasteal exec make -j: make forks a compile only on a
// token, and the daemon lends none while memory holds admission.
func TestMemoryLimitedBuildExec(t *testing.T) {
	testMemoryLimitedBuild(t, true)
}

func testMemoryLimitedBuild(t *testing.T, exec bool) {
	b := newLimitedBuild(t, 400<<20, []int{250, 250, 250, 250, 250, 250}, 800)
	b.exec = exec
	for round := 1; round <= 2; round++ {
		run(t, b.e.cmd(b.src, "make", "clean"))
		before := b.g.OOMKills()
		out, err := b.make()
		if err != nil {
			t.Fatalf("build %d: make failed: %v\n%s", round, err, out)
		}
		b.checkBuilt(out)
		t.Logf("build %d: %d OOM kills in the group, %s freezes, %s OOM retries", round,
			b.g.OOMKills()-before, b.e.status("freezes"), b.e.status("oom_retries"))
	}
}

// limitedBuild is a make project of memhog compiles in a memory-limited
// cgroup, built through the launcher with a daemon of its own. Each
// compile appends its name to the file runs as it starts, so that a test
// can count the runs, and raises its oom_score_adj to the most.
type limitedBuild struct {
	t    *testing.T
	e    *env
	g    *memtest.Group
	src  string
	cc   string
	runs string
	objs []string
	// exec starts make under numasteal exec, on the daemon's jobserver.
	exec bool
}

func newLimitedBuild(t *testing.T, limit int64, mib []int, ms int) *limitedBuild {
	need(t, "make")
	b := &limitedBuild{t: t, g: memtest.NewGroup(t, limit), e: newEnv(t, "")}
	dir := t.TempDir()
	memhog, _ := memtest.BuildMemhog(t, dir)
	b.src = filepath.Join(dir, "src")
	os.Mkdir(b.src, 0o755)
	b.objs = memtest.Project(t, b.src, mib, ms)
	b.runs = filepath.Join(dir, "runs")
	b.cc = filepath.Join(dir, "cc")
	// The compile is the OOM killer's first choice, as the largest
	// processes of a real build are.
	script := fmt.Sprintf("#!/bin/sh\necho \"$4\" >> %s\necho 1000 > /proc/self/oom_score_adj\nexec %s \"$@\"\n", b.runs, memhog)
	if err := os.WriteFile(b.cc, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return b
}

// make runs make -j in the group through the launcher, and returns its
// output and error.
func (b *limitedBuild) make(args ...string) (string, error) {
	args = append([]string{"-j", "CC=" + b.e.launcher() + " " + b.cc}, args...)
	name := "make"
	if b.exec {
		name, args = filepath.Join(binDir, "numasteal"), append([]string{"exec", "make"}, args...)
	}
	c := b.g.Command(b.e.cmd(b.src, name, args...))
	out, err := c.CombinedOutput()
	return string(out), err
}

// checkBuilt fails the test unless every object exists.
func (b *limitedBuild) checkBuilt(out string) {
	b.t.Helper()
	for _, o := range b.objs {
		if _, err := os.Stat(filepath.Join(b.src, o)); err != nil {
			b.t.Fatalf("%s missing after make succeeded\n%s", o, out)
		}
	}
}

// start runs make in the background: done closes when it has ended, and
// out and err are its output and error then.
func (b *limitedBuild) start() (done chan struct{}, out *string, err *error) {
	done, out, err = make(chan struct{}), new(string), new(error)
	go func() { *out, *err = b.make(); close(done) }()
	return done, out, err
}

// compilePid waits for a memhog compile to run in the group and returns
// its pid.
func (b *limitedBuild) compilePid() int {
	var pid int
	poll(b.t, "the compile to start", func() bool {
		for _, p := range b.g.Pids() {
			if cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); strings.Contains(string(cmd), "memhog") {
				pid = p
				return true
			}
		}
		return false
	})
	return pid
}

// built returns how many objects exist.
func (b *limitedBuild) built() int {
	n := 0
	for _, o := range b.objs {
		if _, err := os.Stat(filepath.Join(b.src, o)); err == nil {
			n++
		}
	}
	return n
}

// runsOf returns how many times the compile of obj started.
func (b *limitedBuild) runsOf(obj string) int {
	data, _ := os.ReadFile(b.runs)
	return strings.Count(string(data), obj+"\n")
}

// TestMemoryTooBigFailsOnce: a compile that needs more than the whole
// limit is OOM-killed running alone, is not run again, and fails with a
// message that names its peak and the limit. A build whose launcher or
// daemon the kernel killed as well is tried again, up to three times (see
// TestMemoryOOMRetried).
func TestMemoryTooBigFailsOnce(t *testing.T) {
	var fails []string
	for attempt := 1; attempt <= 3; attempt++ {
		b := newLimitedBuild(t, 300<<20, []int{500}, 600)
		out, err := b.make()
		if err == nil {
			t.Fatalf("make succeeded with a 500 MiB compile under a 300 MiB limit:\n%s", out)
		}
		if n := b.runsOf("f000.o"); n != 1 {
			t.Fatalf("the compile ran %d times, want once", n)
		}
		var missing []string
		for _, want := range []string{"killed by the kernel's OOM killer at a peak of", "while it ran alone", "limit 300 MiB"} {
			if !strings.Contains(out, want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 {
			return
		}
		log, _ := os.ReadFile(b.e.sock + ".log")
		why := fmt.Sprintf("make's output lacks %q (%d OOM kills in the group):\n%s\nthe daemon's log:\n%s", missing, b.g.OOMKills(), out, log)
		t.Logf("attempt %d: %s", attempt, why)
		fails = append(fails, why)
	}
	t.Errorf("three builds without the message:\n%s", strings.Join(fails, "\n\n"))
}

// TestMemoryOOMRetried: another program suddenly takes memory while a
// compile runs, and the kernel OOM-kills the compile: it runs again, and
// make sees one success.
//
// The kernel picks its victims: while a killed process gives its memory
// back it may kill another one of the group (the program, or now and
// then the daemon, which runs in the group here and which no test can
// protect: a negative oom_score_adj needs a privilege this sandbox
// refuses, and the launchers' commands share make's cgroup). A failed
// build is therefore tried up to three times, each failure logged with
// the daemon's log; a fault of numasteal's fails all three.
func TestMemoryOOMRetried(t *testing.T) {
	var fails []string
	for attempt := 1; attempt <= 3; attempt++ {
		why, ok := oomRetriedOnce(t)
		if ok {
			return
		}
		t.Logf("attempt %d: %s", attempt, why)
		fails = append(fails, why)
	}
	t.Errorf("the build failed three times:\n%s", strings.Join(fails, "\n\n"))
}

// oomRetriedOnce runs TestMemoryOOMRetried's build once: ok when make
// succeeded, with the compile run again once per OOM kill of it; why
// says what went wrong otherwise.
func oomRetriedOnce(t *testing.T) (why string, ok bool) {
	// The compile (growing to 200 MiB) once it holds 128 MiB and the
	// program (280 MiB) do not fit 400 MiB together; the program and
	// everything else do. A compile of about 100 MiB still fits beside
	// the program and the few MiB the rest of the group holds, so the
	// program waits for 128: started earlier it may run and exit beside
	// the compile without an OOM kill.
	b := newLimitedBuild(t, 400<<20, []int{200}, 3000)
	hogSrc := filepath.Join(b.src, "hog.c")
	os.WriteFile(hogSrc, []byte("/* memhog mem=280 ms=0 */\n"), 0o644)
	done, out, err := b.start()
	poll(t, "the compile to hold 128 MiB", func() bool {
		for _, p := range b.g.Pids() {
			cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/statm", p))
			var size, rss int64
			fmt.Sscan(string(st), &size, &rss)
			if strings.Contains(string(cmd), "f000.c") && rss*4096 >= 128<<20 {
				return true
			}
		}
		return false
	})
	memhog := filepath.Join(filepath.Dir(b.src), "memhog")
	hog := b.g.Command(exec.Command(memhog, hogSrc, "-o", hogSrc+".o"))
	hout, herr := hog.CombinedOutput()
	<-done
	if *err != nil {
		log, _ := os.ReadFile(b.e.sock + ".log")
		return fmt.Sprintf("make failed: %v, %d OOM kills in the group\n%s\nthe other program: %v %s\nthe daemon's log:\n%s",
			*err, b.g.OOMKills(), *out, herr, hout, log), false
	}
	retries, runs := b.e.status("oom_retries"), b.runsOf("f000.o")
	t.Logf("%d OOM kills in the group, %s retries, %d runs of the compile; the other program: %v %s", b.g.OOMKills(), retries, runs, herr, hout)
	if runs < 2 || retries != fmt.Sprint(runs-1) {
		t.Errorf("want the compile OOM-killed and run again once per kill: %s retries, %d runs\n%s", retries, runs, *out)
	}
	return "", true
}

// TestMemoryUserKillNotRetried: a compile killed by SIGKILL from someone
// (no OOM kill counted) is not run again: make sees it killed.
func TestMemoryUserKillNotRetried(t *testing.T) {
	b := newLimitedBuild(t, 400<<20, []int{10}, 60000)
	done, out, err := b.start()
	pid := b.compilePid()
	syscall.Kill(pid, syscall.SIGKILL)
	<-done
	if *err == nil {
		t.Fatalf("make succeeded after its compile was killed:\n%s", *out)
	}
	if n := b.runsOf("f000.o"); n != 1 {
		t.Errorf("the killed compile ran %d times, want once\n%s", n, *out)
	}
}

// TestMemoryOtherProgram: another program takes memory in the middle of a
// build whose compiles fit the limit two at a time. The daemon holds
// admission back and freezes the newest compile while the program holds
// its memory; no compile is OOM-killed, the build completes, and once the
// program is gone compiles run two at a time again.
func TestMemoryOtherProgram(t *testing.T) {
	mib := make([]int, 12)
	for i := range mib {
		mib[i] = 150
	}
	b := newLimitedBuild(t, 560<<20, mib, 1500)
	hogSrc := filepath.Join(b.src, "hog.c")
	os.WriteFile(hogSrc, []byte("/* memhog mem=220 ms=3000 */\n"), 0o644)
	done, out, err := b.start()
	poll(t, "two objects built", func() bool { return b.built() >= 2 })
	hog := b.g.Command(exec.Command(filepath.Join(filepath.Dir(b.src), "memhog"), hogSrc, "-o", hogSrc+".o"))
	if hout, err := hog.CombinedOutput(); err != nil {
		t.Fatalf("the other program failed (killed by the OOM killer?): %v\n%s", err, hout)
	}
	left := len(b.objs) - b.built()
	two := false
	for !two {
		select {
		case <-done:
		default:
			var st daemon.Status
			if json.Unmarshal([]byte(b.e.statusJSON()), &st) == nil && len(st.Running) == 2 {
				two = true
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		break
	}
	<-done
	if *err != nil {
		t.Fatalf("make failed: %v\n%s", *err, *out)
	}
	b.checkBuilt(*out)
	t.Logf("%d OOM kills, %s freezes, %s OOM retries; %d compiles left when the other program ended, two at once again: %v",
		b.g.OOMKills(), b.e.status("freezes"), b.e.status("oom_retries"), left, two)
	if b.g.OOMKills() != 0 {
		t.Errorf("%d OOM kills in the group", b.g.OOMKills())
	}
	if !two && left >= 3 {
		t.Errorf("%d compiles were left when the other program ended, and never two ran at once again", left)
	}
}

// TestMemoryDaemonDiesWhileFrozen: the daemon freezes a compile (SIGSTOP
// to the launcher's children, done here by the test) and is killed; the
// launcher sees its connection close and continues the compile, and the
// build completes instead of hanging.
func TestMemoryDaemonDiesWhileFrozen(t *testing.T) {
	b := newLimitedBuild(t, 400<<20, []int{10}, 1500)
	done, out, err := b.start()
	pid := b.compilePid()
	syscall.Kill(pid, syscall.SIGSTOP)
	poll(t, "the compile to stop", func() bool {
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return strings.Contains(string(st), ") T ")
	})
	b.e.killDaemon()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		syscall.Kill(pid, syscall.SIGCONT)
		t.Fatal("the build hangs on the stopped compile after the daemon died")
	}
	if *err != nil {
		t.Fatalf("make failed: %v\n%s", *err, *out)
	}
	b.checkBuilt(*out)
}

// TestMemoryFirstRunMixed: a first build of small compiles (20 MiB) and
// two of 250 MiB in a 450 MiB group, in whatever order make starts them:
// a need is estimated when the job reaches the head of its queue, from
// the build's jobs that ended by then, and raised to what a running job
// of its kind holds; when a large compile is admitted beside another on a
// low estimate, the daemon freezes the newer as they outgrow memory.
// make sees no failure and every object is built. The freeze is a race
// with the compile's growth that the daemon wins when it gets a CPU to
// sample (a quiet machine: no OOM kill); on a host loaded past its CPUs
// the kernel may kill first, and then every kill is a compile the daemon
// ran again.
func TestMemoryFirstRunMixed(t *testing.T) {
	b := newLimitedBuild(t, 450<<20, []int{20, 20, 20, 20, 250, 250}, 2000)
	out, err := b.make()
	if err != nil {
		t.Fatalf("make failed: %v\n%s", err, out)
	}
	b.checkBuilt(out)
	kills := b.g.OOMKills()
	retries, _ := strconv.ParseInt(b.e.status("oom_retries"), 10, 64)
	t.Logf("%d OOM kills, %s freezes, %d OOM retries", kills, b.e.status("freezes"), retries)
	if kills > retries {
		t.Errorf("%d OOM kills in the group and %d compiles run again: a kill that was not a compile's", kills, retries)
	}
}

// TestCommandOOMScore: a command run in a slot, measured (forked) or
// handed off (exec'd), has oom_score_adj oomscore.Task, or what the
// launcher inherited when that is higher, so that the OOM killer takes it
// before make.
func TestCommandOOMScore(t *testing.T) {
	own, err := oomscore.Get(0)
	if err != nil {
		t.Skip("SKIP: ", err)
	}
	want := max(own, oomscore.Task)
	e := newEnv(t, "--slots 1")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	adj := filepath.Join(dir, "adj")
	// The command also reports its parent's value once it is the
	// launcher's own again (for at most ten seconds): a launcher that
	// forked the command puts its own back.
	script := fmt.Sprintf(`i=0; while [ $(cat /proc/$PPID/oom_score_adj) != %d ] && [ $i -lt 1000 ]; do i=$((i+1)); sleep 0.01; done
echo $$ $(cat /proc/self/oom_score_adj) $(cat /proc/$PPID/oom_score_adj) > %s`, own, adj)
	for round, wantHandoff := range []bool{false, true} {
		c := e.cmd("", e.launcher(), "sh", "-c", script, "-o", out)
		run(t, c)
		var pid, got, parent int
		b, _ := os.ReadFile(adj)
		fmt.Sscanf(string(b), "%d %d %d", &pid, &got, &parent)
		if handedOff := pid == c.Process.Pid; handedOff != wantHandoff {
			t.Fatalf("run %d: handed off %v, want %v", round+1, handedOff, wantHandoff)
		}
		if got != want {
			t.Errorf("run %d (handed off %v): the command's oom_score_adj is %d, want %d (the launcher inherited %d)",
				round+1, wantHandoff, got, want, own)
		}
		if !wantHandoff && parent != own {
			t.Errorf("run %d: the launcher that forked the command stays at oom_score_adj %d, want its own %d back", round+1, parent, own)
		}
	}
	if got, _ := oomscore.Get(0); got != own {
		t.Errorf("the test's own oom_score_adj changed from %d to %d", own, got)
	}
}
