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

// processesWith returns the pids of the processes whose command line
// holds s.
func processesWith(s string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), s) && alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestDeadBuildDropsWaiting: make -j with the daemon at one slot, one
// slow job running and the others waiting; make is killed. Its waiting
// launchers exit at once without running their command, and no further
// job starts, though the slot is still held by the running one.
func TestDeadBuildDropsWaiting(t *testing.T) {
	need(t, "make")
	e := newEnv(t, "--slots 1")
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	job := filepath.Join(dir, "job.sh")
	os.WriteFile(job, []byte("#!/bin/sh\necho \"$1 $$\" >> "+ran+"\nexec sleep 600\n"), 0o755)
	var targets []string
	for i := range 8 {
		targets = append(targets, "t"+strconv.Itoa(i))
	}
	mk := "all: " + strings.Join(targets, " ") + "\n%:\n\t$(CC) $@\n"
	os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644)
	c := e.cmd(dir, "make", "-j8", "CC="+e.launcher()+" "+job)
	// A file, not a pipe: the orphaned launchers would keep a pipe open
	// and Wait waiting.
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	c.Stdout, c.Stderr = out, out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var running int // the pid of the job that runs
	t.Cleanup(func() {
		c.Process.Kill()
		if running > 0 {
			syscall.Kill(running, syscall.SIGKILL)
		}
		for _, pid := range processesWith(job) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	// The grant comes before the job's command has run its first line:
	// both are waited for.
	poll(t, "one job running and seven waiting", func() bool {
		b, _ := os.ReadFile(ran)
		return strings.Contains(e.statusJSON(), `"waiting":7`) && strings.Count(string(b), "\n") >= 1
	})
	b, _ := os.ReadFile(ran)
	if f := strings.Fields(string(b)); len(f) == 2 {
		running, _ = strconv.Atoi(f[1])
	} else {
		t.Fatalf("want one job started, ran: %q", b)
	}
	c.Process.Kill()
	c.Wait()
	// Every launcher ends but the running job's (handed off, it is the
	// job, now sleep).
	poll(t, "the waiting launchers to exit", func() bool { return len(processesWith(job)) == 0 })
	if st := e.statusJSON(); regexp.MustCompile(`"waiting":[1-9]`).MatchString(st) {
		t.Errorf("jobs still wait: %s", st)
	}
	if b, _ := os.ReadFile(out.Name()); strings.Count(string(b), "not run: the build make-") != 7 {
		t.Errorf("want one line from each of the 7 dropped launchers:\n%s", b)
	}
	// Once the slot is free, nothing of the dead build starts.
	syscall.Kill(running, syscall.SIGKILL)
	if got := e.done(); got != "1" {
		t.Errorf("done = %s, want 1", got)
	}
	if b, _ := os.ReadFile(ran); strings.Count(string(b), "\n") != 1 {
		t.Errorf("jobs started after make died:\n%s", b)
	}
	log, _ := os.ReadFile(e.sock + ".log")
	if !strings.Contains(string(log), "dropped its 7 waiting jobs") {
		t.Errorf("the daemon's log does not say it dropped 7 jobs:\n%s", log)
	}
}
