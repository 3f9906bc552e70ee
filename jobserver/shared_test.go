//go:build linux

package jobserver

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sharedClient returns a client on s's pipe that reads through a duplicate
// of the shared, blocking read description: the fallback used when
// /proc/self/fd cannot reopen the pipe.
func sharedClient(t *testing.T, s *Server) *Client {
	t.Helper()
	rfd, err := unix.FcntlInt(s.c.ep.r.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		t.Fatal(err)
	}
	wfd, err := unix.FcntlInt(s.c.ep.w.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		t.Fatal(err)
	}
	c, err := newClient(&endpoint{rfd: rfd, wfd: wfd, shared: true}, Auth{Kind: KindPipe, Jobs: s.n})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSharedFallback: the blocking-read fallback still bounds the slots,
// honours cancellation while waiting and loses no token.
func TestSharedFallback(t *testing.T) {
	s, err := NewServer(3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := sharedClient(t, s)
	defer c.Close()
	ctx := t.Context()
	var toks []Token
	for range 3 {
		tok, err := c.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, tok)
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := c.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("fourth slot: %v", err)
	}
	for _, tok := range toks {
		c.Release(tok)
	}
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for range 100 {
				tok, err := c.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				c.Release(tok)
			}
		})
	}
	wg.Wait()
	if st, _ := s.Stats(); st.InPipe != 2 || c.Held() != 0 {
		t.Errorf("after the fallback stress: %+v", st)
	}
}
