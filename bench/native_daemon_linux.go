//go:build linux

package bench

import (
	"errors"

	"golang.org/x/sys/unix"
)

// processHandle signals one process: a pidfd, which a reused pid cannot
// redirect, or the pid on a kernel without pidfd_open (before 5.3).
type processHandle struct{ fd, pid int }

func openProcess(pid int) (processHandle, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		return processHandle{fd: -1, pid: pid}, nil
	}
	if err != nil {
		return processHandle{}, err
	}
	return processHandle{fd: fd, pid: pid}, nil
}

func (h processHandle) signal(sig unix.Signal) error {
	if h.fd < 0 {
		return unix.Kill(h.pid, sig)
	}
	return unix.PidfdSendSignal(h.fd, sig, nil, 0)
}

func (h processHandle) close() {
	if h.fd >= 0 {
		unix.Close(h.fd)
	}
}
