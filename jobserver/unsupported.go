//go:build !linux

package jobserver

import (
	"context"
	"errors"
	"os"
	"os/exec"
)

// errUnsupported is returned by NewServer where jobservers are not
// implemented.
var errUnsupported = errors.New("jobserver: not supported on this system")

// MaxSlots bounds NewServer's n.
const MaxSlots = 4096

// Token is one job slot; see the Linux implementation.
type Token struct{}

// Implicit reports whether t is the client's implicit slot.
func (Token) Implicit() bool { return true }

// Client takes job slots from a jobserver; never created on this system.
type Client struct{}

// FromEnv reports ErrNoJobserver: jobservers are supported on Linux only.
func FromEnv(env []string) (*Client, error) { return nil, ErrNoJobserver }

// FromMakeflags reports ErrNoJobserver: jobservers are supported on Linux only.
func FromMakeflags(flags string) (*Client, error) { return nil, ErrNoJobserver }

// Auth returns the zero Auth.
func (c *Client) Auth() Auth { return Auth{} }

// Acquire returns ErrClosed.
func (c *Client) Acquire(ctx context.Context) (Token, error) { return Token{}, ErrClosed }

// Release returns ErrNotHeld.
func (c *Client) Release(t Token) error { return ErrNotHeld }

// Held returns 0.
func (c *Client) Held() int { return 0 }

// Prepare returns ErrClosed.
func (c *Client) Prepare(cmd *exec.Cmd) error { return ErrClosed }

// Close does nothing.
func (c *Client) Close() error { return nil }

// Server is a jobserver; never created on this system.
type Server struct{ dir string }

// Stats is a snapshot of a Server's accounting.
type Stats struct {
	Slots, Tokens, InPipe, Held, Running, Out, Recovered, Drained int
}

// NewServer fails: jobservers are supported on Linux only.
func NewServer(n int, opts ...Option) (*Server, error) { return nil, errUnsupported }

// Client returns nil.
func (s *Server) Client() *Client { return nil }

// Auth returns the zero Auth.
func (s *Server) Auth() Auth { return Auth{} }

// Prepare returns an error.
func (s *Server) Prepare(cmd *exec.Cmd) error { return errUnsupported }

// Start returns an error.
func (s *Server) Start(cmd *exec.Cmd) error { return errUnsupported }

// Wait waits for cmd.
func (s *Server) Wait(cmd *exec.Cmd) error { return cmd.Wait() }

// Started does nothing.
func (s *Server) Started() {}

// Exited does nothing.
func (s *Server) Exited() (int, error) { return 0, nil }

// Reconcile does nothing.
func (s *Server) Reconcile() (int, error) { return 0, nil }

// Stats returns an error.
func (s *Server) Stats() (Stats, error) { return Stats{}, errUnsupported }

// Close does nothing.
func (s *Server) Close() error { return nil }

func (c *Client) tokenFile() (*os.File, error) { return nil, errUnsupported }

// Elastic is a jobserver whose token count its owner changes; never
// created on this system.
type Elastic struct{}

// NewElastic fails: jobservers are supported on Linux only.
func NewElastic() (*Elastic, error) { return nil, errUnsupported }

// Export returns an error.
func (e *Elastic) Export() (r, w *os.File, err error) { return nil, nil, errUnsupported }

// Lend returns an error.
func (e *Elastic) Lend(n int) error { return errUnsupported }

// Reclaim returns an error.
func (e *Elastic) Reclaim(n int) (int, error) { return 0, errUnsupported }

// Idle returns an error.
func (e *Elastic) Idle() (int, error) { return 0, errUnsupported }

// Close does nothing.
func (e *Elastic) Close() error { return nil }
