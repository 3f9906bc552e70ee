package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// On a terminal (a pseudo-terminal the test opens, as tmux or script
// would), the real binary redraws one status line in place: "\r\033[K"
// then "[N/4] R running, F failed, ETA …"; the task lines of a pipe
// ("[1/4] ok …") are not printed for tasks that succeed silently.
func TestRunLiveProgressOnTerminal(t *testing.T) {
	bin := numastealBinary(t)
	dir := t.TempDir()
	cmds := writeFile(t, dir, "c.txt", strings.Repeat("sleep 0.3\n", 4))
	cmd := exec.Command(bin, "run", "-j", "1", "--history", filepath.Join(dir, "hist"), cmds)
	cmd.Dir = dir
	code, out := runOnPty(t, cmd, time.Minute)
	if code != exitOK {
		t.Fatalf("exit %d:\n%q", code, out)
	}
	status := regexp.MustCompile(`\r\x1b\[K\[\d/4\] \d running, 0 failed(, [^\r]*)?, ETA [?0-9:]+, [0-9.]+s`)
	if n := len(status.FindAllString(out, -1)); n < 2 {
		t.Errorf("%d redrawn status lines, want several; the terminal got:\n%q", n, out)
	}
	if strings.Contains(out, "] ok ") {
		t.Errorf("per-task lines on a terminal:\n%q", out)
	}
	if !strings.Contains(out, "4 tasks: 4 succeeded") {
		t.Errorf("no summary:\n%q", out)
	}
	// The same run into a pipe prints a line per task and no redraw.
	pipe := exec.Command(bin, "run", "-j", "1", "--history", filepath.Join(dir, "hist"), cmds)
	pipe.Dir = dir
	b, err := pipe.Output()
	if err != nil || strings.Contains(string(b), "\x1b[K") || !strings.Contains(string(b), "[4/4] ok ") {
		t.Errorf("into a pipe: %v\n%q", err, b)
	}
}
