package oomscore

import (
	"os/exec"
	"runtime"
	"testing"
)

func TestRaise(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIP: oom_score_adj is Linux's")
	}
	if err := Set(0, 1001); err == nil {
		t.Error("Set(0, 1001) succeeded")
	}
	// A child of its own, so that this test process keeps its value.
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	pid := cmd.Process.Pid
	own, err := Get(0)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Get(pid); err != nil || got != own {
		t.Fatalf("the child's value %d (%v), want this process's %d (inherited)", got, err, own)
	}
	if own >= 1000 {
		t.Skipf("SKIP: this process runs at oom_score_adj %d already; nothing to raise", own)
	}
	to := max(own+1, Task)
	if prev, wrote, err := Raise(pid, to); err != nil || !wrote || prev != own {
		t.Fatalf("Raise(%d, %d) = %d, %v, %v; want %d and a write", pid, to, prev, wrote, err, own)
	}
	if got, _ := Get(pid); got != to {
		t.Errorf("after Raise: %d, want %d", got, to)
	}
	// Never lowered by Raise.
	if prev, wrote, err := Raise(pid, own); err != nil || wrote || prev != to {
		t.Errorf("Raise to a lower value = %d, %v, %v; want %d and no write", prev, wrote, err, to)
	}
	if got, _ := Get(pid); got != to {
		t.Errorf("after a lower Raise: %d, want %d kept", got, to)
	}
	// Back to the value it had, which needs no privilege.
	if err := Set(pid, own); err != nil {
		t.Errorf("Set back to %d after raising: %v", own, err)
	}
	if got, _ := Get(pid); got != own {
		t.Errorf("after Set back: %d, want %d", got, own)
	}
	if _, err := Get(-1); err == nil {
		t.Error("Get(-1) succeeded")
	}
}
