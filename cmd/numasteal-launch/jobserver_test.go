package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// execMake returns "numasteal exec make ARGS..." in dir, the README's way
// to start a make build on the daemon's jobserver.
func (e *env) execMake(dir string, args ...string) []string {
	return append([]string{filepath.Join(binDir, "numasteal"), "exec", "make"}, args...)
}

// daemonLog returns the daemon's log.
func (e *env) daemonLog() string {
	b, _ := os.ReadFile(e.sock + ".log")
	return string(b)
}

// jobserverEnded returns, from the daemon's log, the last ended jobserver
// build's lost tokens counted back and most launchers alive at once.
func (e *env) jobserverEnded() (recovered, peak int, ok bool) {
	m := regexp.MustCompile(`jobserver had -?\d+ tokens lent, (\d+) counted back lost; at most (\d+) launchers at once`).
		FindAllStringSubmatch(e.daemonLog(), -1)
	if len(m) == 0 {
		return 0, 0, false
	}
	last := m[len(m)-1]
	recovered, _ = strconv.Atoi(last[1])
	peak, _ = strconv.Atoi(last[2])
	return recovered, peak, true
}

// TestExecMakeForksOnlyWhatRuns: "numasteal exec make -j" on 40 ready
// compiles at two slots builds every object through the daemon, with at
// most the slots and a token ahead of launchers alive at once (counted
// by the daemon, and by each compile as it starts), where make -j alone
// would fork all 40.
func TestExecMakeForksOnlyWhatRuns(t *testing.T) {
	need(t, "make", "cc")
	e := newEnv(t, "")
	dir := project(t, 40)
	count := filepath.Join(dir, "count.sh")
	seen := filepath.Join(dir, "seen")
	// Each compile notes how many launchers are alive as it starts.
	// (this test binary's launchers only: other tests may run beside).
	os.WriteFile(count, []byte("#!/bin/sh\npgrep -c -f '^"+e.launcher()+" ' >> "+seen+"\nexec cc \"$@\"\n"), 0o755)
	args := e.execMake(dir, "-j", "CC="+e.launcher()+" "+count)
	out := run(t, e.cmd(dir, args[0], args[1:]...))
	checkBuilt(t, e, dir, "prog", 42, out)
	b, _ := os.ReadFile(seen)
	most := 0
	for _, f := range strings.Fields(string(b)) {
		n, _ := strconv.Atoi(f)
		most = max(most, n)
	}
	t.Logf("most launchers alive at a compile's start: %d", most)
	// A launcher whose command ended gives its slot back before it
	// exits: the next job may start while it is still alive.
	const slots, ahead = 2, 1
	if most > slots+ahead+1 {
		t.Errorf("%d launchers alive at once; the jobserver allows %d (and one exiting)", most, slots+ahead)
	}
	// The daemon learns that a handed-off command ended from its pidfd,
	// which its watcher reads after make, the command's parent, may have
	// given the token back and started the next launcher: on a loaded
	// machine it counts that one beside the one ending (seen once in a
	// CI run beside another test load: 4, with 3 by the compiles' count).
	poll(t, "the daemon to see the build end", func() bool { _, _, ok := e.jobserverEnded(); return ok })
	_, peak, _ := e.jobserverEnded()
	if peak > slots+ahead+1 {
		t.Errorf("the daemon saw %d launchers at once; the jobserver allows %d (and one ending)", peak, slots+ahead)
	}
}

// TestExecTokensSurviveKills: with the daemon's jobserver, a compile
// killed by SIGKILL and a sub-make killed by SIGKILL while it holds a
// token lose no slot: a later phase of the same make still runs two jobs
// at once (a barrier of two that cannot pass on one slot), and the daemon
// counts the sub-make's token back.
func TestExecTokensSurviveKills(t *testing.T) {
	need(t, "make")
	e := newEnv(t, "")
	dir := t.TempDir()
	marker := "nsl-orphan-" + strconv.Itoa(os.Getpid())
	wait := func(f string) string { // wait for file f, at most 60 s
		return "i=0; until [ -e " + f + " ]; do i=$$((i+1)); [ $$i -gt 6000 ] && exit 1; sleep 0.01; done"
	}
	files := map[string]string{
		"Makefile": "all: barrier\n" +
			"killcc:\n\t-$(CC) sh -c 'kill -9 $$$$'\n" +
			"killsub: killcc\n\t-$(MAKE) -C sub\n" +
			"barrier: killsub\n\t$(MAKE) -C bar\n",
		// The sub-make runs hold (on a token) and k (on its implicit
		// slot); k kills the sub-make once hold runs.
		"sub/Makefile": "all: k hold\n" +
			"hold:\n\ttouch held; exec sh -c 'sleep 600 # " + marker + "' >/dev/null 2>&1 </dev/null\n" +
			"k:\n\t" + wait("held") + "; kill -9 $$PPID\n",
		"bar/Makefile": "all: a b\n" +
			"a:\n\ttouch a.started; " + wait("b.started") + "\n" +
			"b:\n\ttouch b.started; " + wait("a.started") + "\n",
	}
	for name, text := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
	t.Cleanup(func() {
		for _, pid := range processesWith(marker) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	args := e.execMake(dir, "CC="+e.launcher())
	out := run(t, e.cmd(dir, args[0], args[1:]...))
	t.Logf("make:\n%s", out)
	poll(t, "the daemon to see the build end", func() bool { _, _, ok := e.jobserverEnded(); return ok })
	if rec, _, _ := e.jobserverEnded(); rec < 1 {
		t.Errorf("the daemon counted back %d lost tokens, want the killed sub-make's\n%s", rec, e.daemonLog())
	}
}

// TestExecOtherClientsDrawFromTheSlots: a jobserver client under
// numasteal exec make that is not make — numasteal run, as a recursive
// recipe — takes its tasks' slots from the daemon's tokens: at one slot
// it runs its four tasks one at a time, where its own limit (one per
// CPU) would run them side by side.
func TestExecOtherClientsDrawFromTheSlots(t *testing.T) {
	need(t, "make")
	e := newEnv(t, "--slots 1")
	dir := t.TempDir()
	var cmds strings.Builder
	for i := range 4 {
		f := filepath.Join(dir, "t"+strconv.Itoa(i))
		cmds.WriteString("sh -c 'date +%s%N > " + f + "; sleep 0.2; date +%s%N >> " + f + "'\n")
	}
	os.WriteFile(filepath.Join(dir, "cmds.txt"), []byte(cmds.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "Makefile"), []byte("all:\n\t+"+filepath.Join(binDir, "numasteal")+
		" run --history= --progress=none -j 0 cmds.txt\n"), 0o644)
	args := e.execMake(dir)
	run(t, e.cmd(dir, args[0], args[1:]...))
	type span struct{ start, end int64 }
	var spans []span
	for i := range 4 {
		b, err := os.ReadFile(filepath.Join(dir, "t"+strconv.Itoa(i)))
		f := strings.Fields(string(b))
		if err != nil || len(f) != 2 {
			t.Fatalf("task %d left %q (%v)", i, b, err)
		}
		s, _ := strconv.ParseInt(f[0], 10, 64)
		en, _ := strconv.ParseInt(f[1], 10, 64)
		spans = append(spans, span{s, en})
	}
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if a.start < b.end && b.start < a.end {
				t.Fatalf("two tasks of numasteal run overlapped at one slot: %v", spans)
			}
		}
	}
}
