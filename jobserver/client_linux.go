//go:build linux

package jobserver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Token is one job slot: either the client's implicit slot or one byte read
// from the jobserver. Release it with [Client.Release] when the job ends.
// The zero Token is not held by anyone.
type Token struct {
	id       uint64
	b        byte
	implicit bool
}

// Implicit reports whether t is the client's implicit slot rather than a
// byte taken from the jobserver.
func (t Token) Implicit() bool { return t.implicit }

// Client takes job slots from a jobserver. Every client owns one implicit
// slot, handed out by Acquire before any token is read, so a client under
// make -jN runs at most N jobs together with make's others. All methods are
// safe for concurrent use.
type Client struct {
	ep   *endpoint
	auth Auth
	wake int // eventfd: kicks the poller (cancellation, implicit release, Close)

	// implicit holds one value while the implicit slot is free.
	implicit chan struct{}
	// poller is a one-slot semaphore: only its holder waits in poll(2), so
	// waiting acquirers tie up one OS thread, not one each.
	poller chan struct{}
	done   chan struct{} // closed by Close
	// waiting counts the Acquire calls that found no free implicit slot at
	// entry, and polling the poller while it is in (or about to enter)
	// poll(2): tests wait for them instead of sleeping.
	waiting, polling atomic.Int32

	mu         sync.Mutex
	closed     bool
	nextID     uint64
	implicitID uint64          // id of the outstanding implicit Token, 0 if free
	held       map[uint64]byte // tokens read and not yet released
}

// FromEnv joins the jobserver named by the last MAKEFLAGS entry of env
// (typically os.Environ()). It returns ErrNoJobserver when there is none and
// an *UnavailableError when one is named but cannot be used.
//
// For the pipe form it checks that R and W are open pipes (make closes them
// for non-recursive recipes, and the numbers may since have been reused),
// then marks the inherited descriptors close-on-exec: children get the
// jobserver only through Client.Prepare, which rewrites their MAKEFLAGS to
// the descriptor numbers they receive. A child started without Prepare
// keeps the inherited MAKEFLAGS but not the descriptors, and a make child
// then warns "jobserver unavailable" and runs serially.
func FromEnv(env []string) (*Client, error) {
	return FromMakeflags(makeflagsFromEnv(env))
}

// FromMakeflags joins the jobserver named by a MAKEFLAGS value; see FromEnv.
func FromMakeflags(flags string) (*Client, error) {
	a, err := ParseMakeflags(flags)
	if err != nil {
		return nil, err
	}
	var ep *endpoint
	switch a.Kind {
	case KindPipe:
		ep, err = openPipe(a.Option, a.R, a.W)
	case KindFIFO:
		ep, err = openFIFO(a.Option, a.Path)
	default:
		return nil, ErrNoJobserver
	}
	if err != nil {
		return nil, err
	}
	c, err := newClient(ep, a)
	if err != nil {
		ep.close()
		return nil, err
	}
	return c, nil
}

// newClient wraps an open endpoint.
func newClient(ep *endpoint, a Auth) (*Client, error) {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("jobserver: eventfd: %w", err)
	}
	c := &Client{
		ep:       ep,
		auth:     a,
		wake:     wake,
		implicit: make(chan struct{}, 1),
		poller:   make(chan struct{}, 1),
		done:     make(chan struct{}),
		held:     make(map[uint64]byte),
	}
	c.implicit <- struct{}{}
	return c, nil
}

// Auth returns the jobserver description the client joined.
func (c *Client) Auth() Auth { return c.auth }

// Acquire returns a job slot, blocking until one is free or ctx is done.
// The implicit slot comes first; after that each slot is a token read from
// the jobserver. On error no slot is held: a token that arrives after ctx
// is cancelled is written back.
func (c *Client) Acquire(ctx context.Context) (Token, error) {
	if err := ctx.Err(); err != nil {
		return Token{}, err
	}
	select {
	case <-c.implicit:
		return c.grantImplicit()
	default:
	}
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	for {
		select {
		case <-c.implicit:
			return c.grantImplicit()
		default:
		}
		select {
		case <-c.implicit:
			return c.grantImplicit()
		case c.poller <- struct{}{}:
			t, err := c.poll(ctx)
			<-c.poller
			return t, err
		case <-ctx.Done():
			return Token{}, ctx.Err()
		case <-c.done:
			return Token{}, ErrClosed
		}
	}
}

// grantImplicit records the implicit slot, just taken from c.implicit.
func (c *Client) grantImplicit() (Token, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		c.implicit <- struct{}{}
		return Token{}, ErrClosed
	}
	c.nextID++
	c.implicitID = c.nextID
	return Token{id: c.nextID, implicit: true}, nil
}

// poll waits for a token, the implicit slot, cancellation or Close. Only the
// holder of c.poller calls it.
func (c *Client) poll(ctx context.Context) (Token, error) {
	// Cancellation kicks the eventfd. If the kick has started when poll
	// returns, wait for it: Close may close c.wake as soon as the poller
	// leaves.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { c.kick(); close(fired) })
	defer func() {
		if !stop() {
			<-fired
		}
	}()
	fds := []unix.PollFd{{Fd: int32(c.ep.rfd), Events: unix.POLLIN}, {Fd: int32(c.wake), Events: unix.POLLIN}}
	for {
		select {
		case <-c.implicit:
			return c.grantImplicit()
		case <-c.done:
			return Token{}, ErrClosed
		default:
		}
		if err := ctx.Err(); err != nil {
			return Token{}, err
		}
		if !c.ep.shared || fds[0].Revents&unix.POLLIN != 0 {
			t, ok, err := c.take(ctx)
			if ok || err != nil {
				return t, err
			}
		}
		fds[0].Revents, fds[1].Revents = 0, 0
		c.polling.Add(1)
		_, err := unix.Poll(fds, -1)
		c.polling.Add(-1)
		if err != nil && err != unix.EINTR {
			return Token{}, fmt.Errorf("jobserver: poll: %w", err)
		}
		if fds[1].Revents&unix.POLLIN != 0 {
			var buf [8]byte
			unix.Read(c.wake, buf[:]) // reset the eventfd; EAGAIN is fine
		}
	}
}

// take reads one token if the pipe has one. A token read after ctx is done
// or the client closed goes straight back.
func (c *Client) take(ctx context.Context) (Token, bool, error) {
	var (
		b   byte
		ok  bool
		err error
	)
	if c.ep.shared {
		// A blocking read must not hold c.mu, or Release could not write
		// the token it waits for.
		if b, ok, err = c.ep.readToken(); !ok || err != nil {
			return Token{}, false, err
		}
		c.mu.Lock()
	} else {
		c.mu.Lock()
		if b, ok, err = c.ep.readToken(); !ok || err != nil {
			c.mu.Unlock()
			return Token{}, false, err
		}
	}
	defer c.mu.Unlock()
	if c.closed || ctx.Err() != nil {
		if werr := c.ep.writeToken(b); werr != nil {
			return Token{}, false, werr
		}
		if c.closed {
			return Token{}, false, ErrClosed
		}
		return Token{}, false, ctx.Err()
	}
	c.nextID++
	c.held[c.nextID] = b
	return Token{id: c.nextID, b: b}, true, nil
}

// kick wakes the poller.
func (c *Client) kick() {
	var buf [8]byte
	binary.NativeEndian.PutUint64(buf[:], 1) // eventfd counters are host-endian
	unix.Write(c.wake, buf[:])               // EAGAIN only at counter overflow: already awake
}

// Release returns the slot t: the implicit slot becomes free again, a token
// byte is written back to the jobserver. Releasing after Close is a no-op,
// since Close returned every token.
func (c *Client) Release(t Token) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.id == 0 {
		return ErrNotHeld
	}
	if t.implicit {
		if c.implicitID != t.id {
			return ErrNotHeld
		}
		c.implicitID = 0
		c.implicit <- struct{}{}
		// Wake a poller, which may be waiting for this slot. Acquirers that
		// are not polling see c.implicit themselves; after Close c.wake is
		// closed (and Close holds c.poller).
		if !c.closed && len(c.poller) > 0 {
			c.kick()
		}
		return nil
	}
	b, ok := c.held[t.id]
	if !ok {
		if c.closed {
			return nil
		}
		return ErrNotHeld
	}
	delete(c.held, t.id)
	return c.ep.writeToken(b)
}

// Held returns the number of jobserver tokens the client holds, not
// counting the implicit slot.
func (c *Client) Held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.held)
}

// Prepare passes the client's jobserver on to a child that has not been
// started: a make run by one of this client's jobs then shares the same
// slots, using the job's slot as its implicit one. See Server.Prepare.
func (c *Client) Prepare(cmd *exec.Cmd) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return prepare(cmd, c.ep, c.auth.Jobs)
}

// Close writes back every token the client holds, wakes blocked Acquire
// calls (they return ErrClosed) and closes the client's descriptors. It is
// meant for SIGINT and shutdown paths; later Release calls are no-ops.
// In the fallback without /proc (reads on the shared, possibly blocking
// description) an Acquire blocked in read(2) delays Close until a token
// arrives.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	var errs []error
	for id, b := range c.held {
		errs = append(errs, c.ep.writeToken(b))
		delete(c.held, id)
	}
	c.mu.Unlock()
	c.kick()
	c.poller <- struct{}{} // wait for the poller to leave; keep the slot
	errs = append(errs, c.ep.close(), unix.Close(c.wake))
	return errors.Join(errs...)
}

// prepare exports ep to cmd through MAKEFLAGS and, for the pipe form,
// cmd.ExtraFiles.
func prepare(cmd *exec.Cmd, ep *endpoint, jobs int) error {
	if cmd.Process != nil {
		return errors.New("jobserver: Prepare after Start")
	}
	var auth string
	if ep.path != "" {
		auth = fifoPfx + ep.path
	} else {
		fd := 3 + len(cmd.ExtraFiles)
		cmd.ExtraFiles = append(cmd.ExtraFiles, ep.r, ep.w)
		auth = fmt.Sprintf("%d,%d", fd, fd+1)
	}
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = setenv(env, "MAKEFLAGS", MergeMakeflags(makeflagsFromEnv(env), jobs, auth))
	return nil
}

// tokenFile returns a new close-on-exec descriptor of the jobserver's
// write side, for another process to write tokens back with.
func (c *Client) tokenFile() (*os.File, error) {
	fd, err := unix.FcntlInt(uintptr(c.ep.wfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("jobserver: dup of the write side: %w", err)
	}
	return os.NewFile(uintptr(fd), "jobserver-w"), nil
}
