//go:build linux

package jobserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// MaxSlots bounds NewServer's n: the tokens must fit in a pipe buffer.
const MaxSlots = 4096

// Server is a jobserver with n slots: n−1 tokens in a pipe (or FIFO) plus
// the implicit slot of whoever runs the top-level job. The server process
// takes its own slots through Client; children receive the jobserver
// through Prepare (or Start) and are counted by Started/Exited so that the
// tokens of a child that died holding them are recovered. All methods are
// safe for concurrent use.
type Server struct {
	n   int
	tok byte
	log *zap.Logger
	dir string // FIFO directory, removed by Close; "" for the pipe form
	c   *Client

	mu        sync.Mutex
	running   int // children between Started and Exited
	recovered int // tokens written back by Reconcile
	drained   int // surplus tokens Reconcile read out
}

// Stats is a snapshot of a Server's accounting.
type Stats struct {
	Slots     int // n
	Tokens    int // n−1, the tokens the jobserver was filled with
	InPipe    int // tokens now in the pipe (FIONREAD)
	Held      int // tokens held by the server's own Client
	Running   int // children started and not yet exited
	Out       int // Tokens − InPipe − Held: tokens held by children (or lost)
	Recovered int // tokens refilled by Reconcile so far
	Drained   int // surplus tokens removed by Reconcile so far
}

// NewServer creates a jobserver with n job slots (1 ≤ n ≤ MaxSlots), holding
// n−1 tokens. It is a pipe unless WithFIFO is given.
func NewServer(n int, opts ...Option) (*Server, error) {
	if n < 1 || n > MaxSlots {
		return nil, fmt.Errorf("jobserver: NewServer: %d slots, want 1..%d", n, MaxSlots)
	}
	cfg := serverConfig{token: '+'}
	for _, o := range opts {
		o.apply(&cfg)
	}
	if cfg.log == nil {
		cfg.log = zap.NewNop()
	}
	s := &Server{n: n, tok: cfg.token, log: cfg.log}
	var (
		ep   *endpoint
		auth = Auth{Jobs: n, R: -1, W: -1}
		err  error
	)
	if cfg.fifo {
		if s.dir, err = os.MkdirTemp(cfg.fifoDir, "numasteal-jobserver-"); err != nil {
			return nil, fmt.Errorf("jobserver: NewServer: %w", err)
		}
		path := filepath.Join(s.dir, "fifo")
		if err := unix.Mkfifo(path, 0o600); err != nil {
			os.RemoveAll(s.dir)
			return nil, fmt.Errorf("jobserver: NewServer: mkfifo %s: %w", path, err)
		}
		auth.Kind, auth.Path, auth.Option = KindFIFO, path, optAuth+fifoPfx+path
		ep, err = openFIFO(auth.Option, path)
	} else {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return nil, fmt.Errorf("jobserver: NewServer: pipe: %w", err)
		}
		auth.Kind, auth.Option = KindPipe, "server pipe"
		ep, err = openPipe(auth.Option, p[0], p[1])
		unix.Close(p[0]) // the endpoint holds its own duplicates
		unix.Close(p[1])
	}
	if err != nil {
		s.removeDir()
		return nil, err
	}
	for range n - 1 {
		if err := ep.writeToken(s.tok); err != nil {
			ep.close()
			s.removeDir()
			return nil, fmt.Errorf("jobserver: NewServer: fill: %w", err)
		}
	}
	if s.c, err = newClient(ep, auth); err != nil {
		ep.close()
		s.removeDir()
		return nil, err
	}
	return s, nil
}

// removeDir removes the FIFO directory, if any.
func (s *Server) removeDir() error {
	if s.dir == "" {
		return nil
	}
	return os.RemoveAll(s.dir)
}

// Client returns the server process's own client: its implicit slot plus
// the shared tokens. A server-side scheduler acquires a slot from it for
// every job it runs, including those that start children.
func (s *Server) Client() *Client { return s.c }

// Auth describes the jobserver; Option is the MAKEFLAGS word for the FIFO
// form. For the pipe form the descriptor numbers depend on each child.
func (s *Server) Auth() Auth { return s.c.auth }

// Prepare exports the jobserver to cmd, which must not be started: it sets
// MAKEFLAGS in cmd.Env (starting from os.Environ() when cmd.Env is nil,
// replacing any -j and jobserver words and keeping the rest) to
// " -jN --jobserver-auth=R,W" and appends the pipe's two ends to
// cmd.ExtraFiles, so that R = 3+len(ExtraFiles before). The FIFO form sets
// --jobserver-auth=fifo:PATH and passes no descriptors. Call it once per cmd.
// The child's implicit slot is the slot of the job that runs it.
func (s *Server) Prepare(cmd *exec.Cmd) error {
	return s.c.Prepare(cmd)
}

// Start prepares cmd, counts it with Started and starts it. Pair it with
// Wait.
func (s *Server) Start(cmd *exec.Cmd) error {
	if err := s.Prepare(cmd); err != nil {
		return err
	}
	s.Started()
	if err := cmd.Start(); err != nil {
		s.Exited()
		return err
	}
	return nil
}

// Wait waits for a cmd started by Start and counts it with Exited, which
// may recover the tokens it died holding. It returns cmd.Wait's error.
func (s *Server) Wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	s.Exited()
	return err
}

// Started counts a child about to be started with the jobserver; call it
// before exec.Cmd.Start when not using Server.Start.
func (s *Server) Started() {
	s.mu.Lock()
	s.running++
	s.mu.Unlock()
}

// Exited counts a child that has exited (after exec.Cmd.Wait returned, or
// after a failed Start). When it was the last running child, it reconciles
// the token count and returns the tokens recovered (negative: drained).
func (s *Server) Exited() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running > 0 {
		s.running--
	}
	if s.running > 0 {
		return 0, nil
	}
	d, err := s.reconcileLocked()
	if err != nil && !errors.Is(err, ErrClosed) {
		s.log.Warn("jobserver: reconcile failed", zap.Error(err))
	}
	return d, err
}

// Reconcile restores the jobserver's token count and returns the number of
// tokens written (negative when surplus tokens were drained).
//
// Method: while no child holds the jobserver, every token the server's own
// Client does not hold must be in the pipe, so Reconcile compares the pipe's
// byte count (FIONREAD) with Tokens − Held and writes the difference (a child
// killed while holding tokens never wrote them back) or reads out the
// surplus (a token written twice, or by an orphan after an earlier refill).
// It is done under the client's lock, so the server's own reads and writes
// cannot interleave.
//
// Limits: the count is exact only when no other process can hold tokens.
// Reconcile refuses (returns 0, nil) while children counted by Started are
// running, since tokens they hold are indistinguishable from lost ones; a
// dead child's tokens are then recovered when the last child exits, and
// until then each running child still has its implicit slot, so the build
// slows but does not stop. Grandchildren that outlive a killed child (an
// orphaned sub-make) still hold the descriptors and may return tokens after
// the refill: kill the child's whole process group, and a later Reconcile
// drains the surplus.
func (s *Server) Reconcile() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running > 0 {
		return 0, nil
	}
	return s.reconcileLocked()
}

// reconcileLocked does Reconcile; s.mu must be held and no child running.
func (s *Server) reconcileLocked() (int, error) {
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, ErrClosed
	}
	in, err := c.ep.pending()
	if err != nil {
		return 0, err
	}
	diff := s.n - 1 - len(c.held) - in
	for i := 0; i < diff; i++ {
		if err := c.ep.writeToken(s.tok); err != nil {
			return i, err
		}
		s.recovered++
	}
	for i := 0; i < -diff; i++ {
		_, ok, err := c.ep.readToken()
		if err != nil || !ok {
			return -i, err
		}
		s.drained++
	}
	if diff != 0 {
		s.log.Warn("jobserver: reconciled token count", zap.Int("refilled", diff), zap.Int("in_pipe", in), zap.Int("held", len(c.held)), zap.Int("tokens", s.n-1))
	}
	return diff, nil
}

// Stats returns a snapshot of the token accounting.
func (s *Server) Stats() (Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return Stats{}, ErrClosed
	}
	in, err := c.ep.pending()
	if err != nil {
		return Stats{}, err
	}
	return Stats{
		Slots: s.n, Tokens: s.n - 1, InPipe: in, Held: len(c.held), Running: s.running,
		Out: s.n - 1 - in - len(c.held), Recovered: s.recovered, Drained: s.drained,
	}, nil
}

// Close closes the server's client (writing back the tokens it holds) and
// the jobserver, and removes the FIFO. Children still running keep their
// inherited descriptors but their make sees the jobserver drain.
func (s *Server) Close() error {
	return errors.Join(s.c.Close(), s.removeDir())
}
