package vmtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numasteal/numasteal/internal/testenv"
)

// vmTimeout is numa-vm's --timeout for one boot-and-check; a boot takes
// 5-10 s, the checks a few more.
const vmTimeout = "180"

// TestVM boots one numa-vm guest per layout, in sequence (parallel boots on
// a 2-CPU host are slower than serial ones), and runs the guest checks in
// each. A failure shows the guest's whole output.
func TestVM(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("SKIP: numa-vm needs a Linux host with apt (this is %s)", runtime.GOOS)
	}
	if testing.Short() {
		t.Skip("SKIP: -short: not booting NUMA VMs (about 10 s each)")
	}
	shared := testenv.RequireShared(t)
	numaVM := filepath.Join(shared, "tools", "numa-vm", "numa-vm")
	if _, err := os.Stat(numaVM); err != nil {
		t.Fatalf("shared folder %s has no numa-vm: %v", shared, err)
	}
	guest := buildGuest(t)
	for _, l := range Layouts() {
		t.Run(l.Name, func(t *testing.T) { runLayout(t, numaVM, guest, l) })
	}
}

// buildGuest compiles package guest's tests into a static x86-64 binary.
func buildGuest(t *testing.T) string {
	t.Helper()
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "guest.test")
	cmd := exec.CommandContext(t.Context(), "go", "test", "-c", "-o", bin, "./internal/vmtest/guest")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the guest checks: %v\n%s", err, out)
	}
	t.Logf("built the guest checks in %.1fs", time.Since(start).Seconds())
	return bin
}

// topSkip matches a top-level guest test that skipped: inside the VM every
// check must run.
var topSkip = regexp.MustCompile(`(?m)^--- SKIP: \S+`)

// runLayout boots l and runs the guest checks in it.
func runLayout(t *testing.T, numaVM, guest string, l Layout) {
	args := append(l.Args(), "--timeout", vmTimeout,
		"--env", EnvInVM+"=1", "--env", EnvLayout+"="+l.Encode(),
		"--", guest, "-test.v", "-test.timeout=150s")
	// A boot that times out before the guest program printed anything
	// never reached the code under test (a QEMU TCG guest hung in boot:
	// seen once in many runs, where a boot takes 5 s): it is booted again,
	// at most twice. A guest that started and then hung is a failure.
	var (
		cmd     *exec.Cmd
		err     error
		log     string
		elapsed time.Duration
	)
	for try := 1; ; try++ {
		cmd, log, elapsed, err = bootLayout(t, numaVM, args)
		if err == nil || cmd.ProcessState.ExitCode() != 124 || !strings.HasPrefix(log, "numa-vm: timed out") || try == 3 {
			break
		}
		t.Logf("layout %s: the VM timed out before the guest printed anything (boot %d of 3): booting again", l.Name, try)
	}
	failed := func(format string, a ...any) {
		t.Helper()
		t.Errorf(format, a...)
		t.Errorf("numa-vm %s\nguest output:\n%s", strings.Join(quoteArgs(args), " "), log)
	}
	switch {
	case err != nil:
		failed("layout %s: %s after %.1fs (%v)", l.Name, exitMeaning(cmd.ProcessState.ExitCode()), elapsed.Seconds(), err)
	case topSkip.MatchString(log):
		failed("layout %s: guest checks skipped inside the VM: %s", l.Name, topSkip.FindString(log))
	case !strings.Contains(log, "\nPASS"):
		failed("layout %s: guest output has no PASS line", l.Name)
	default:
		t.Logf("layout %s: guest checks passed in %.1fs (boot included)\n%s", l.Name, elapsed.Seconds(), summary(log))
	}
}

// bootLayout runs numa-vm with args once and returns its command (for the
// exit status), its trimmed output, how long it took and its error.
func bootLayout(t *testing.T, numaVM string, args []string) (*exec.Cmd, string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, numaVM, args...)
	// numa-vm kills its VM on TERM and leaves nothing behind.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	return cmd, strings.TrimSpace(string(out)), time.Since(start), err
}

// exitMeaning explains numa-vm's exit status.
func exitMeaning(code int) string {
	switch code {
	case 124:
		return "numa-vm timed out (--timeout " + vmTimeout + ")"
	case 125:
		return "the VM itself failed (bad option, QEMU error or kernel panic)"
	case -1:
		return "numa-vm was killed"
	default:
		return "guest checks failed"
	}
}

// summary keeps the guest lines worth showing on success: the test results
// and their logs.
func summary(log string) string {
	var keep []string
	for line := range strings.Lines(log) {
		if !strings.HasPrefix(line, "=== ") {
			keep = append(keep, "    "+strings.TrimRight(line, "\r\n"))
		}
	}
	return strings.Join(keep, "\n")
}

// quoteArgs quotes arguments holding shell metacharacters so the logged
// command can be pasted into a shell.
func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " ;\"'{}$,") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return out
}
