//go:build linux

package jobserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pipeClient returns a client joined to s through its prepared MAKEFLAGS,
// as a child would, using the server's export descriptors in this process.
func pipeClient(t *testing.T, s *Server) *Client {
	t.Helper()
	flags := fmt.Sprintf("-j%d --jobserver-auth=%d,%d", s.n, s.c.ep.r.Fd(), s.c.ep.w.Fd())
	c, err := FromMakeflags(flags)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFromEnvNoJobserver(t *testing.T) {
	for _, env := range [][]string{
		nil,
		{"PATH=/bin"},
		{"MAKEFLAGS=-j"},
		{"MAKEFLAGS=-j4"},
		{"MAKEFLAGS= -j4 --jobserver-auth=3,4", "MAKEFLAGS=k"}, // the last entry wins
	} {
		if c, err := FromEnv(env); !errors.Is(err, ErrNoJobserver) || c != nil {
			t.Errorf("FromEnv(%q) = %v, %v; want ErrNoJobserver", env, c, err)
		}
	}
}

func TestFromMakeflagsUnavailable(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "regular"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	// A read side at end of file (its write side closed) beside another
	// pipe's write side: the reused-descriptor case that made every
	// token read fail.
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	w2.Close()
	tests := []struct {
		flags string
		is    error
	}{
		{fmt.Sprintf("-j3 --jobserver-auth=%d,%d", r2.Fd(), w.Fd()), nil}, // two pipes
		{"-j3 --jobserver-auth=1000,1001", syscall.EBADF},
		{fmt.Sprintf("-j3 --jobserver-auth=%d,%d", f.Fd(), f.Fd()), nil},
		{fmt.Sprintf("-j3 --jobserver-auth=%d,%d", f.Fd(), w.Fd()), nil},
		{fmt.Sprintf("-j3 --jobserver-auth=%d,%d", w.Fd(), r.Fd()), nil}, // swapped ends
		{"-j3 --jobserver-auth=fifo:" + filepath.Join(t.TempDir(), "missing"), fs.ErrNotExist},
		{"-j3 --jobserver-auth=fifo:" + f.Name(), nil},
		{"-j3 --jobserver-auth=3,x", nil},
	}
	for _, tt := range tests {
		c, err := FromMakeflags(tt.flags)
		var ue *UnavailableError
		if c != nil || !errors.As(err, &ue) {
			t.Errorf("FromMakeflags(%q) = %v, %v; want *UnavailableError", tt.flags, c, err)
			continue
		}
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("FromMakeflags(%q) = %v; want it to wrap %v", tt.flags, err, tt.is)
		}
	}
}

func TestAcquireImplicitFirst(t *testing.T) {
	s, err := NewServer(3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := pipeClient(t, s)
	defer c.Close()
	ctx := t.Context()
	a, _ := c.Acquire(ctx)
	b, _ := c.Acquire(ctx)
	d, err := c.Acquire(ctx)
	if err != nil || !a.Implicit() || b.Implicit() || d.Implicit() {
		t.Fatalf("slots %+v %+v %+v, %v: want implicit then two tokens", a, b, d, err)
	}
	if b.b != '+' {
		t.Errorf("token byte %q, want '+'", b.b)
	}
	short, cancel := contextTimeout(t, 30*time.Millisecond)
	defer cancel()
	if _, err := c.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("fourth slot: %v, want DeadlineExceeded", err)
	}
	// A released implicit slot wakes a blocked Acquire.
	got := make(chan Token)
	go func() {
		tok, err := c.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- tok
	}()
	awaitClient(t, "Acquire in poll(2)", func() bool { return c.polling.Load() == 1 })
	if err := c.Release(a); err != nil {
		t.Fatal(err)
	}
	if tok := <-got; !tok.Implicit() {
		t.Errorf("after releasing the implicit slot got %+v", tok)
	} else {
		c.Release(tok)
	}
	for _, tok := range []Token{b, d} {
		if err := c.Release(tok); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := s.Stats(); st.InPipe != 2 {
		t.Errorf("after release: %+v", st)
	}
}

func TestReleaseErrors(t *testing.T) {
	s, err := NewServer(2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := s.Client()
	if err := c.Release(Token{}); !errors.Is(err, ErrNotHeld) {
		t.Errorf("Release(zero) = %v", err)
	}
	imp, _ := c.Acquire(t.Context())
	tok, _ := c.Acquire(t.Context())
	for _, x := range []Token{imp, tok} {
		if err := c.Release(x); err != nil {
			t.Fatal(err)
		}
		if err := c.Release(x); !errors.Is(err, ErrNotHeld) {
			t.Errorf("second Release(%+v) = %v, want ErrNotHeld", x, err)
		}
	}
	other := pipeClient(t, s)
	defer other.Close()
	tok, _ = c.Acquire(t.Context())
	if err := other.Release(tok); !errors.Is(err, ErrNotHeld) {
		t.Errorf("Release on another client = %v", err)
	}
	c.Release(tok)
}

func TestCloseReturnsTokensAndWakesWaiters(t *testing.T) {
	s, err := NewServer(3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := pipeClient(t, s)
	ctx := t.Context()
	var toks []Token
	for range 3 {
		tok, err := c.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, tok)
	}
	errc := make(chan error, 2)
	for range 2 {
		go func() { _, err := c.Acquire(ctx); errc <- err }()
	}
	awaitClient(t, "two blocked Acquires, one in poll(2)", func() bool { return c.waiting.Load() == 2 && c.polling.Load() == 1 })
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Errorf("blocked Acquire after Close = %v, want ErrClosed", err)
		}
	}
	if st, _ := s.Stats(); st.InPipe != 2 {
		t.Errorf("Close returned tokens: %+v", st)
	}
	for _, tok := range toks {
		if err := c.Release(tok); err != nil {
			t.Errorf("Release after Close = %v, want nil", err)
		}
	}
	if st, _ := s.Stats(); st.InPipe != 2 {
		t.Errorf("Release after Close wrote tokens again: %+v", st)
	}
	if _, err := c.Acquire(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Acquire after Close = %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

// TestStressCancel runs many acquirers on two clients of one jobserver with
// random cancellation: the slots in use never exceed the tokens plus the two
// implicit slots, and no token is lost or duplicated.
func TestStressCancel(t *testing.T) {
	const n = 4
	s, err := NewServer(n)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	clients := []*Client{s.Client(), pipeClient(t, s)}
	defer clients[1].Close()
	var inUse, peak, got, cancelled atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		c := clients[g%2]
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 150 {
				ctx, cancel := context.WithTimeout(t.Context(), time.Duration(rng.IntN(300))*time.Microsecond)
				tok, err := c.Acquire(ctx)
				cancel()
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Error(err)
						return
					}
					cancelled.Add(1)
					continue
				}
				got.Add(1)
				v := inUse.Add(1)
				for p := peak.Load(); v > p && !peak.CompareAndSwap(p, v); p = peak.Load() {
				}
				time.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond)
				inUse.Add(-1)
				if err := c.Release(tok); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("acquired %d, cancelled %d, peak %d", got.Load(), cancelled.Load(), peak.Load())
	if p := peak.Load(); p > n-1+2 {
		t.Errorf("%d slots in use at once, want ≤ %d", p, n-1+2)
	}
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.InPipe != n-1 || st.Held != 0 || clients[1].Held() != 0 {
		t.Errorf("after the stress: %+v, client held %d; want every token back", st, clients[1].Held())
	}
}

// TestPrepare checks MAKEFLAGS merging and descriptor numbering.
func TestPrepare(t *testing.T) {
	s, err := NewServer(3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("true")
	cmd.ExtraFiles = []*os.File{f}
	cmd.Env = []string{"A=1", "MAKEFLAGS=k -j8 --jobserver-auth=7,8 -- CC=gcc"}
	if err := s.Prepare(cmd); err != nil {
		t.Fatal(err)
	}
	want := []string{"A=1", "MAKEFLAGS=k -j3 --jobserver-auth=4,5 -- CC=gcc"}
	if fmt.Sprint(cmd.Env) != fmt.Sprint(want) {
		t.Errorf("Env = %q, want %q", cmd.Env, want)
	}
	if len(cmd.ExtraFiles) != 3 || cmd.ExtraFiles[1] != s.c.ep.r || cmd.ExtraFiles[2] != s.c.ep.w {
		t.Errorf("ExtraFiles = %v", cmd.ExtraFiles)
	}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if err := s.Prepare(cmd); err == nil {
		t.Error("Prepare after Start succeeded")
	}
	if _, err := NewServer(0); err == nil {
		t.Error("NewServer(0) succeeded")
	}
}

// TestClientPrepareChain: a client passes its jobserver on to a child, which
// shares the same tokens.
func TestClientPrepareChain(t *testing.T) {
	t.Parallel()
	s, err := NewServer(3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := pipeClient(t, s)
	defer c.Close()
	tok, err := c.Acquire(t.Context()) // the job running the child
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release(tok)
	out := filepath.Join(t.TempDir(), "intervals")
	cmd := helperCmd(t, "jobs", envJobs+"=6", envOut+"="+out)
	if err := c.Prepare(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	checkOverlap(t, readIntervals(t, out), 6, 3)
}

// TestFromMakeflagsCloseOnExec: the inherited descriptors stop leaking into
// children once the client has its own copies.
func TestFromMakeflagsCloseOnExec(t *testing.T) {
	var p [2]int
	if err := syscall.Pipe2(p[:], 0); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(p[0])
	defer syscall.Close(p[1])
	c, err := FromMakeflags(fmt.Sprintf(" -j2 --jobserver-auth=%d,%d", p[0], p[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, fd := range p {
		fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || fl&unix.FD_CLOEXEC == 0 {
			t.Errorf("fd %d flags %#x, %v: want FD_CLOEXEC", fd, fl, err)
		}
	}
}
