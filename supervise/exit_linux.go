//go:build linux

package supervise

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// exitWatch waits for a main child's exit through a pidfd (pidfd_open,
// PIDFD_NONBLOCK) in Go's network poller: the pidfd turns readable when
// the process exits, so the task's monitor parks like a goroutine reading
// a socket, with no thread blocked in waitid and no goroutine of its own
// to hand the news on. The wait can be interrupted (a read deadline in the
// past), for ctx, Terminate and Kill.
type exitWatch struct {
	f *os.File
}

// watchExit returns an exitWatch of child pid, or nil where pidfds do not
// work (Linux < 5.10 has no PIDFD_NONBLOCK).
func watchExit(pid int) *exitWatch {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil
	}
	// A non-blocking descriptor goes into the poller.
	return &exitWatch{f: os.NewFile(uintptr(fd), "pidfd")}
}

// exited reports whether the process has exited, without reaping it.
func (w *exitWatch) exited() bool {
	if w == nil {
		return false
	}
	rc, err := w.f.SyscallConn()
	if err != nil {
		return false
	}
	done := false
	_ = rc.Control(func(fd uintptr) { done = pidfdExited(int(fd)) })
	return done
}

// wait blocks until the process has exited (true) or interrupt is called
// (false).
func (w *exitWatch) wait() bool {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return false
	}
	done := false
	err = rc.Read(func(fd uintptr) bool {
		done = pidfdExited(int(fd))
		return done
	})
	return done && err == nil
}

// interrupt makes a wait in progress, and every later one, return false
// unless the process has already exited.
func (w *exitWatch) interrupt() {
	if w != nil {
		_ = w.f.SetReadDeadline(time.Unix(1, 0))
	}
}

// close closes the pidfd.
func (w *exitWatch) close() {
	if w != nil {
		_ = w.f.Close()
	}
}

// pidfdExited peeks at the process of pidfd fd: true once it has exited
// (it stays unreaped, WNOWAIT). An error other than EINTR (the process was
// reaped already) counts as exited.
func pidfdExited(fd int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		switch {
		case err == nil:
			return info.Signo != 0 // WNOHANG: si_signo 0 while it runs
		case errors.Is(err, unix.EINTR):
			continue
		default:
			return true
		}
	}
}
