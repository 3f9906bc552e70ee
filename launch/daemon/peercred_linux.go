//go:build linux

package daemon

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// peerCred returns the uid and pid of the process at the other end of c
// (SO_PEERCRED: the credentials of the connecting process, which the
// kernel recorded at connect time).
func peerCred(c syscall.Conn) (cred, error) {
	return sockCred(c, func(fd int) (cred, error) {
		uc, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			return cred{}, err
		}
		return cred{int(uc.Uid), int(uc.Pid)}, nil
	})
}
