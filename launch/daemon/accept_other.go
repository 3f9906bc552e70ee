//go:build !linux

package daemon

import "net"

// listener is the daemon's listening socket: package net's, whose
// connections are served from the runtime poller.
type listener struct{ ln *net.UnixListener }

// listen makes the socket at path (which must not exist) and listens on it.
func listen(path string) (*listener, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false) // unlinked by Run, under the lock
	return &listener{ln: ln}, nil
}

// accept waits for the next connection; net.ErrClosed once close was
// called.
func (l *listener) accept() (conn, error) {
	c, err := l.ln.AcceptUnix()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// close makes accept return; safe from any goroutine.
func (l *listener) close() { l.ln.Close() }

// release frees the listener once accept no longer runs.
func (l *listener) release() { l.ln.Close() }
