//go:build linux

package launch

import (
	"bytes"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ReadRights reads one message that carries descriptors (SCM_RIGHTS),
// as the daemon's answer to "jobserver" does, and returns it with the
// descriptors received, close-on-exec. Call it before any Read on c.
func (c *Conn) ReadRights() (Msg, []int, error) {
	f, ok := c.c.(*os.File)
	if !ok || c.r.Buffered() > 0 {
		return Msg{}, nil, fmt.Errorf("%w: descriptors on a connection already read", ErrMalformed)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return Msg{}, nil, err
	}
	var line []byte
	var fds []int
	buf := make([]byte, 512)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for !bytes.HasSuffix(line, []byte("\n")) {
		var n, oobn int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
			return rerr != unix.EAGAIN
		})
		if err == nil {
			err = rerr
		}
		if err != nil {
			closeAll(fds)
			return Msg{}, nil, err
		}
		if n == 0 && oobn == 0 {
			closeAll(fds)
			return Msg{}, nil, fmt.Errorf("%w: connection closed before the reply", ErrMalformed)
		}
		if oobn > 0 {
			cms, err := unix.ParseSocketControlMessage(oob[:oobn])
			if err != nil {
				closeAll(fds)
				return Msg{}, nil, err
			}
			for _, cm := range cms {
				if got, err := unix.ParseUnixRights(&cm); err == nil {
					fds = append(fds, got...)
				}
			}
		}
		line = append(line, buf[:n]...)
		if len(line) > MaxLine {
			closeAll(fds)
			return Msg{}, nil, fmt.Errorf("%w: reply longer than %d bytes", ErrMalformed, MaxLine)
		}
	}
	m, err := ParseMsg(line)
	if err != nil {
		closeAll(fds)
		return Msg{}, nil, err
	}
	return m, fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// Exec replaces the process with the program at path, as the launcher
// runs its command: the signal dispositions and mask the process
// inherited reach the program unchanged ("A launcher is invisible to its
// command's signals" in signals_linux.go). Call it before anything in
// the process calls signal.Notify. It returns only on failure.
func Exec(path string, argv, env []string) error {
	in := startSignals()
	undo := in.beforeExec()
	err := syscall.Exec(path, argv, env)
	undo()
	return err
}
