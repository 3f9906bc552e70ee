//go:build !linux

package launch

import (
	"bufio"
	"net"
)

// Dial connects to the daemon at socket.
func Dial(socket string) (*Conn, error) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		return nil, err
	}
	return &Conn{c: c, r: bufio.NewReaderSize(c, 4096)}, nil
}
