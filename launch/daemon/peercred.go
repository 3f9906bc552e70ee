package daemon

import "syscall"

// cred is who is at the other end of a connection.
type cred struct{ uid, pid int }

// sockCred runs get on c's descriptor: the system's way of asking the
// socket for its peer's credentials (peercred_*.go).
func sockCred(c syscall.Conn, get func(fd int) (cred, error)) (cred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return cred{-1, 0}, err
	}
	var cr cred
	var gerr error
	if err := raw.Control(func(fd uintptr) { cr, gerr = get(int(fd)) }); err != nil {
		return cred{-1, 0}, err
	}
	if gerr != nil {
		return cred{-1, 0}, gerr
	}
	return cr, nil
}
