package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Tests that need the real numasteal binary (a pseudo-terminal on its
// stdout, another uid) build it once, into binDir; TestMain removes it.
var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// numastealBinary returns the path of the numasteal binary built from
// this module, building it on first use.
func numastealBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "numasteal-bin-")
		if err != nil {
			binErr = err
			return
		}
		binDir = dir
		// Others may run it (a test runs it as another user).
		if err := os.Chmod(dir, 0o755); err != nil {
			binErr = err
			return
		}
		out, err := exec.Command("go", "build", "-o", dir+"/", "github.com/numasteal/numasteal/cmd/numasteal").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "numasteal")
}

// removeBinary removes what numastealBinary built (TestMain).
func removeBinary() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// openPty opens a new pseudo-terminal pair: the controlling side and the
// terminal a child gets as its stdin, stdout and stderr.
func openPty(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	fd := int(ptm.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		ptm.Close()
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		ptm.Close()
		t.Fatalf("ptsname: %v", err)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		ptm.Close()
		t.Skipf("no pseudo-terminal: %v", err)
	}
	// A wide terminal, so that no line wraps.
	unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 50, Col: 200})
	return ptm, pts
}

// runOnPty runs cmd with a pseudo-terminal as its stdin, stdout and
// stderr (its controlling terminal, in a session of its own) and returns
// its exit code and everything it wrote there.
func runOnPty(t *testing.T, cmd *exec.Cmd, timeout time.Duration) (int, string) {
	t.Helper()
	ptm, pts := openPty(t)
	defer ptm.Close()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		pts.Close()
		t.Fatal(err)
	}
	pts.Close() // the child has it; reading ptm ends (EIO) once it is gone
	var out bytes.Buffer
	read := make(chan error, 1)
	go func() {
		_, err := io.Copy(&out, ptm)
		read <- err
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-waited
		select {
		case <-read:
			t.Fatalf("still running after %v; output so far:\n%q", timeout, out.String())
		case <-time.After(10 * time.Second):
			t.Fatalf("still running after %v", timeout)
		}
	}
	select {
	case err := <-read:
		if err != nil && !errors.Is(err, syscall.EIO) {
			t.Errorf("reading the terminal: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("the terminal stayed open after the command ended")
	}
	var ee *exec.ExitError
	switch {
	case werr == nil:
		return 0, out.String()
	case errors.As(werr, &ee):
		return ee.ExitCode(), out.String()
	}
	t.Fatal(werr)
	return -1, ""
}
