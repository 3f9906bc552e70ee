//go:build linux

package daemon

import (
	"os"

	"golang.org/x/sys/unix"
)

// openPidfd returns a pollable pidfd of pid (pidfd_open with
// PIDFD_NONBLOCK, Linux 5.10; close-on-exec always), or nil when the
// kernel has none: the daemon then grants no handoffs and every launcher
// waits for its command.
func openPidfd(pid int) *os.File {
	if pid <= 0 {
		return nil
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), "pidfd")
}

// waitExit blocks until the process of the pidfd f has ended (the pidfd
// polls readable) or f is closed. The wait is the runtime poller's: no
// thread is held while the process runs.
func waitExit(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Read(func(fd uintptr) bool {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 0)
		return err != nil || n > 0
	})
}
