package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sigexec is the helper mode that starts a command as a shell's
// background job or nohup would: the signals of $SIGIGN (numbers, comma
// separated) ignored and those of $SIGBLK blocked, then exec of
// os.Args[1:].
func sigexec() int {
	runtime.LockOSThread()
	sigs := func(v string) (out []int) {
		for _, f := range strings.Split(os.Getenv(v), ",") {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
		return out
	}
	for _, sig := range sigs("SIGIGN") {
		act := struct {
			handler uintptr
			rest    [3]uint64
		}{handler: 1} // SIG_IGN
		unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	}
	var set unix.Sigset_t
	for _, sig := range sigs("SIGBLK") {
		set.Val[0] |= 1 << (sig - 1)
	}
	unix.PthreadSigmask(unix.SIG_SETMASK, &set, nil)
	prog, err := exec.LookPath(os.Args[1])
	if err == nil {
		err = syscall.Exec(prog, os.Args[1:], os.Environ())
	}
	fmt.Fprintln(os.Stderr, "sigexec:", err)
	return 127
}

// TestInheritedSignals: a launcher started with signals ignored and
// blocked (a background job of a script ignores SIGINT and SIGQUIT,
// nohup SIGHUP) passes the same dispositions and mask to its command as
// the command would have had without it: handed off, measured, nested
// (run directly), and from the full binary's "numasteal launch".
func TestInheritedSignals(t *testing.T) {
	e := newEnv(t, "")
	ign := []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGPIPE,
		syscall.SIGTERM, syscall.SIGALRM, syscall.SIGWINCH}
	blk := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGUSR2, syscall.SIGHUP, syscall.SIGQUIT}
	list := func(s []syscall.Signal) string {
		var out []string
		for _, sig := range s {
			out = append(out, strconv.Itoa(int(sig)))
		}
		return strings.Join(out, ",")
	}
	// statusOf runs the command that prints its SigIgn and SigBlk lines
	// under the helper, with launcher (nil: none) in front of it.
	statusOf := func(extra []string, launcher ...string) string {
		t.Helper()
		args := append(launcher, "grep", "-E", "^Sig(Ign|Blk)", "/proc/self/status")
		c := e.cmd("", os.Args[0], args...)
		c.Env = append(c.Env, append([]string{"NUMASTEAL_TEST_HELPER=sigexec", "SIGIGN=" + list(ign), "SIGBLK=" + list(blk)}, extra...)...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", c.Args, err, out)
		}
		return string(out)
	}
	want := statusOf(nil)
	var wantIgn, wantBlk uint64
	fmt.Sscanf(want, "SigBlk:\t%x\nSigIgn:\t%x", &wantBlk, &wantIgn)
	for _, sig := range ign {
		if wantIgn&(1<<(sig-1)) == 0 {
			t.Fatalf("the helper did not ignore %v: %q", sig, want)
		}
	}
	for _, sig := range blk {
		if wantBlk&(1<<(sig-1)) == 0 {
			t.Fatalf("the helper did not block %v: %q", sig, want)
		}
	}
	for _, tc := range []struct {
		name     string
		extra    []string
		launcher []string
	}{
		{"handoff", nil, []string{e.launcher()}},
		{"measured", []string{"NUMASTEAL_MEASURE=1"}, []string{e.launcher()}},
		{"direct", []string{"NUMASTEAL_LAUNCH=off"}, []string{e.launcher()}},
		{"numasteal launch", nil, []string{filepath.Join(binDir, "numasteal"), "launch"}},
		{"numasteal launch measured", []string{"NUMASTEAL_MEASURE=1"}, []string{filepath.Join(binDir, "numasteal"), "launch"}},
	} {
		if got := statusOf(tc.extra, tc.launcher...); got != want {
			t.Errorf("%s: the command got\n%swant (as without the launcher)\n%s", tc.name, got, want)
		}
	}
	if got := e.done(); got != "4" {
		t.Errorf("the daemon ran %s jobs, want 4 (all but the direct one)", got)
	}
}
