//go:build linux

package supervise

import (
	"errors"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/internal/freelist"
)

// exitWatch waits for a main child's exit through a pidfd (pidfd_open,
// PIDFD_NONBLOCK), in one of two ways:
//
//   - in Go's network poller (watchExit): the pidfd turns readable when the
//     process exits, so the task's monitor parks like a goroutine reading a
//     socket, with no thread blocked in waitid and no goroutine of its own
//     to hand the news on;
//   - blocking (watchExitHere), for a monitor locked to the thread that
//     forked the child: the thread sleeps in poll(2) on the pidfd and an
//     eventfd, and the child's exit wakes that thread itself, the way
//     make's waitpid does, with no other thread woken to hand the
//     goroutine over. Go's scheduler leaves the P of a thread in a system
//     call alone while other Ps are idle, and gives it back on return.
//
// Either wait can be interrupted (a read deadline in the past, or a write
// to the eventfd), for ctx, Terminate and Kill.
type exitWatch struct {
	f *os.File // the pidfd in the poller; nil for a blocking watch

	// A blocking watch: the pidfd and the eventfd that interrupts the
	// poll, both -1 once closed. mu guards them against close, since
	// interrupt and exited may come from any goroutine. An eventfd never
	// written (woken false) goes back to wakes, the Supervisor's idle
	// ones, when the watch closes.
	mu    sync.Mutex
	fd    int
	wake  int
	woken bool
	wakes *freelist.List[int]
}

// watchExit returns an exitWatch of child pid that waits in the poller,
// or nil where pidfds do not work (Linux < 5.10 has no PIDFD_NONBLOCK).
func watchExit(pid int) *exitWatch {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil
	}
	// A non-blocking descriptor goes into the poller.
	return &exitWatch{f: os.NewFile(uintptr(fd), "pidfd"), fd: -1, wake: -1}
}

// watchExitHere returns a blocking exitWatch of child pid, or nil where
// pidfds or eventfds do not work. Its eventfd is an idle one of wakes
// when there is one: a task that is not interrupted (nearly every one)
// costs no eventfd of its own.
func watchExitHere(pid int, wakes *freelist.List[int]) *exitWatch {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil
	}
	wake, ok := wakes.Pop()
	if !ok {
		wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			unix.Close(fd)
			return nil
		}
	}
	return &exitWatch{fd: fd, wake: wake, wakes: wakes}
}

// exited reports whether the process has exited, without reaping it.
func (w *exitWatch) exited() bool {
	if w == nil {
		return false
	}
	if w.f == nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.fd >= 0 && pidfdExited(w.fd)
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
// (false). Only the task's monitor calls it, before close.
func (w *exitWatch) wait() bool {
	if w.f == nil {
		return w.waitHere()
	}
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

// waitHere is wait for a blocking watch: poll(2) in this thread.
func (w *exitWatch) waitHere() bool {
	fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.wake), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			// Only a bad descriptor could get here: ask the pidfd.
			return pidfdExited(w.fd)
		}
		// A pidfd polls readable once its process has exited (Linux
		// 5.3): no waitid to confirm it.
		if fds[0].Revents&unix.POLLIN != 0 || fds[0].Revents != 0 && pidfdExited(w.fd) {
			return true
		}
		if fds[1].Revents != 0 {
			return false
		}
	}
}

// interrupt makes a wait in progress, and every later one, return false
// unless the process has already exited.
func (w *exitWatch) interrupt() {
	if w == nil {
		return
	}
	if w.f != nil {
		_ = w.f.SetReadDeadline(time.Unix(1, 0))
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wake >= 0 {
		// Never read: the eventfd stays readable for later waits.
		var one = [8]byte{1}
		_, _ = unix.Write(w.wake, one[:])
		w.woken = true
	}
}

// close closes the pidfd, and the eventfd or gives it back.
func (w *exitWatch) close() {
	if w == nil {
		return
	}
	if w.f != nil {
		_ = w.f.Close()
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd >= 0 {
		unix.Close(w.fd)
		if w.woken {
			unix.Close(w.wake)
		} else {
			w.wakes.Push(w.wake)
		}
		w.fd, w.wake = -1, -1
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
