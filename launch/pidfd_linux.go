package launch

import "golang.org/x/sys/unix"

// openPidfd returns a pidfd of pid, or -1 (no such process, or a kernel
// before 5.3).
func openPidfd(pid int) int {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return -1
	}
	return fd
}

// pidfdAlive reports whether the process of pidfd fd has not ended.
func pidfdAlive(fd int) bool {
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(pfd, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 0
	}
}

func closePidfd(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}
