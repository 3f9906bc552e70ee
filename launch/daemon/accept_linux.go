//go:build linux

package daemon

import (
	"errors"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// listener is the daemon's listening socket, an *os.File of the runtime
// poller. The accept loop is woken on it by the poller's thread, which
// runs the loop itself, and the loop answers a first acquire granted at
// once (Server.serve) before anything else is woken. Each accepted
// connection is an *os.File in non-blocking mode, which the poller serves
// from then on.
type listener struct{ f *os.File }

// listenBacklog asks for the longest queue of connections not yet
// accepted that the kernel allows (net.core.somaxconn caps it): every
// launcher of a make -j connects at once.
const listenBacklog = 1<<16 - 1

// listen makes the socket at path (which must not exist) and listens on it.
func listen(path string) (*listener, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	addr := &net.UnixAddr{Name: path, Net: "unix"}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return nil, &net.OpError{Op: "listen", Net: "unix", Addr: addr, Err: os.NewSyscallError("bind", err)}
	}
	if err := unix.Listen(fd, listenBacklog); err != nil {
		unix.Close(fd)
		return nil, &net.OpError{Op: "listen", Net: "unix", Addr: addr, Err: os.NewSyscallError("listen", err)}
	}
	return &listener{f: os.NewFile(uintptr(fd), path)}, nil
}

// accept waits for the next connection; net.ErrClosed once close was
// called. Only the accept loop calls it.
func (l *listener) accept() (conn, error) {
	rc, err := l.f.SyscallConn()
	if err != nil {
		return nil, net.ErrClosed
	}
	for {
		var fd int
		var aerr error
		if err := rc.Read(func(s uintptr) bool {
			fd, _, aerr = unix.Accept4(int(s), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			return aerr != unix.EAGAIN
		}); err != nil {
			return nil, net.ErrClosed
		}
		switch {
		case aerr == nil:
			return os.NewFile(uintptr(fd), "conn"), nil
		case errors.Is(aerr, unix.EINTR), errors.Is(aerr, unix.ECONNABORTED):
		case errors.Is(aerr, unix.EMFILE), errors.Is(aerr, unix.ENFILE), errors.Is(aerr, unix.ENOBUFS), errors.Is(aerr, unix.ENOMEM):
			// Out of descriptors or memory: the connections wait in the
			// queue until some are freed.
			time.Sleep(10 * time.Millisecond)
		default:
			return nil, os.NewSyscallError("accept4", aerr)
		}
	}
}

// close makes accept return net.ErrClosed; safe from any goroutine.
func (l *listener) close() { l.f.Close() }

// release frees the listener once accept no longer runs.
func (l *listener) release() { l.f.Close() }
