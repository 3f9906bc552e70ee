//go:build linux

package jobserver

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Elastic is a jobserver pipe whose number of tokens its owner changes
// while clients use it: Lend writes tokens in, Reclaim reads idle ones
// back out, Idle counts those in the pipe. The owner, not the pipe, knows
// how many tokens it has lent; a client that dies holding tokens loses
// them from the pipe, and the owner decides when to count them back.
// A jobserver served this way hands make its slots one at a time, as a
// machine-wide scheduler frees them (the numasteal daemon serves each
// build's make through one).
//
// The owner reads and writes through descriptors of its own (a new open
// file description of the read side, non-blocking), so the clients'
// blocking descriptors, which Export hands out, are never disturbed.
// An Elastic is safe for concurrent use.
type Elastic struct {
	mu     sync.Mutex
	ep     *endpoint
	tok    byte
	closed bool
}

// NewElastic creates an empty Elastic jobserver: a pipe with no token in
// it.
func NewElastic() (*Elastic, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return nil, fmt.Errorf("jobserver: NewElastic: pipe: %w", err)
	}
	ep, err := openPipe("elastic pipe", p[0], p[1])
	unix.Close(p[0]) // the endpoint holds its own duplicates
	unix.Close(p[1])
	if err != nil {
		return nil, err
	}
	return &Elastic{ep: ep, tok: '+'}, nil
}

// Export returns new descriptors of the pipe's read and write sides, in
// blocking mode and close-on-exec, for a client process (passed as
// exec.Cmd.ExtraFiles, or over a unix socket). The caller closes them.
func (e *Elastic) Export() (r, w *os.File, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, nil, ErrClosed
	}
	rfd, err1 := unix.FcntlInt(e.ep.r.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	wfd, err2 := unix.FcntlInt(e.ep.w.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	if err := errors.Join(err1, err2); err != nil {
		for _, fd := range []int{rfd, wfd} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		return nil, nil, fmt.Errorf("jobserver: export: %w", err)
	}
	return os.NewFile(uintptr(rfd), "jobserver-r"), os.NewFile(uintptr(wfd), "jobserver-w"), nil
}

// Lend writes n tokens into the pipe.
func (e *Elastic) Lend(n int) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	for range n {
		if err := e.ep.writeToken(e.tok); err != nil {
			return err
		}
	}
	return nil
}

// Reclaim reads up to n idle tokens out of the pipe without waiting and
// returns how many it read: those no client had taken.
func (e *Elastic) Reclaim(n int) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, ErrClosed
	}
	got := 0
	for got < n {
		_, ok, err := e.ep.readToken()
		if err != nil {
			return got, err
		}
		if !ok {
			break
		}
		got++
	}
	return got, nil
}

// Idle returns the number of tokens in the pipe: lent and not taken, or
// given back.
func (e *Elastic) Idle() (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, ErrClosed
	}
	return e.ep.pending()
}

// Close closes the owner's descriptors; clients keep the pipe while they
// hold their own. Closing twice is harmless.
func (e *Elastic) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	return e.ep.close()
}
