//go:build linux

package launch

import (
	"bufio"
	"os"

	"golang.org/x/sys/unix"
)

// Dial connects to the daemon at socket.
//
// The socket is made with socket(2) and connect(2) and wrapped in an
// *os.File, not a net.UnixConn: package net links cgo's resolver, which
// makes the launcher a dynamically linked program whose start (the
// dynamic loader, libc's thread arenas) costs a compile a millisecond or
// more. Without net the launcher links statically.
func Dial(socket string) (*Conn, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, &os.SyscallError{Syscall: "socket", Err: err}
	}
	// A connect interrupted by a signal goes on in the kernel; asking
	// again then answers EALREADY while it is under way and EISCONN once
	// it is done.
	for err = unix.Connect(fd, &unix.SockaddrUnix{Name: socket}); err == unix.EINTR || err == unix.EALREADY; {
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: socket})
	}
	if err == unix.EISCONN {
		err = nil
	}
	if err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "connect", Path: socket, Err: err}
	}
	c := os.NewFile(uintptr(fd), socket)
	return &Conn{c: c, r: bufio.NewReaderSize(c, 4096)}, nil
}
