//go:build darwin || freebsd

package daemon

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// peerCred returns the uid of the process at the other end of c
// (LOCAL_PEERCRED); the pid is 0: without pidfds it is not needed.
func peerCred(c syscall.Conn) (cred, error) {
	return sockCred(c, func(fd int) (cred, error) {
		xu, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if err != nil {
			return cred{}, err
		}
		return cred{int(xu.Uid), 0}, nil
	})
}
