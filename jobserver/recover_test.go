//go:build linux

package jobserver

import (
	"bufio"
	"io"
	"strings"
	"testing"
)

// startHog starts a helper that takes every slot of s and returns once it
// reports the tokens it holds.
func startHog(t *testing.T, s *Server) (tokens string, wait func() error) {
	t.Helper()
	cmd := helperCmd(t, "hog")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(cmd); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		s.Wait(cmd)
		t.Fatalf("hog: %v", err)
	}
	return strings.TrimSpace(line), func() error {
		cmd.Process.Kill()
		return s.Wait(cmd)
	}
}

// TestRecoverKilledChild kills a child holding every token; when it is
// reaped the server counts the pipe and refills what the child took.
func TestRecoverKilledChild(t *testing.T) {
	t.Parallel()
	s, err := NewServer(4)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	held, kill := startHog(t, s)
	if held != "held 3" {
		t.Fatalf("hog reported %q, want held 3", held)
	}
	st, _ := s.Stats()
	if st.InPipe != 0 || st.Out != 3 || st.Running != 1 {
		t.Fatalf("while the child holds all tokens: %+v", st)
	}
	if n, err := s.Reconcile(); n != 0 || err != nil {
		t.Fatalf("Reconcile with a child running = %d, %v; want 0, nil", n, err)
	}
	if err := kill(); err == nil {
		t.Fatal("killed child exited cleanly")
	}
	st, _ = s.Stats()
	if st.InPipe != 3 || st.Recovered != 3 || st.Running != 0 || st.Out != 0 {
		t.Fatalf("after the child was killed: %+v, want 3 tokens recovered", st)
	}
	// The server's own client can now use all four slots.
	c := s.Client()
	for i := range 4 {
		tok, err := c.Acquire(t.Context())
		if err != nil {
			t.Fatalf("slot %d: %v", i, err)
		}
		defer c.Release(tok)
	}
}

// TestRecoverWaitsForQuiescence: tokens a dead child held are recovered only
// once no other child, which might hold tokens legitimately, is running.
func TestRecoverWaitsForQuiescence(t *testing.T) {
	t.Parallel()
	s, err := NewServer(3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other := helperCmd(t, "wait")
	stdin, err := other.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(other); err != nil {
		t.Fatal(err)
	}
	_, kill := startHog(t, s)
	kill()
	if st, _ := s.Stats(); st.InPipe != 0 || st.Recovered != 0 || st.Running != 1 {
		t.Errorf("with another child running: %+v, want no recovery yet", st)
	}
	stdin.Close()
	if err := s.Wait(other); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Stats(); st.InPipe != 2 || st.Recovered != 2 {
		t.Errorf("after the last child exited: %+v, want 2 recovered", st)
	}
}

// TestReconcileDrainsSurplus: a token written back twice (an orphan returning
// a token after a refill) is drained.
func TestReconcileDrainsSurplus(t *testing.T) {
	s, err := NewServer(2)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := io.WriteString(s.c.ep.w, "++"); err != nil {
		t.Fatal(err)
	}
	n, err := s.Reconcile()
	if n != -2 || err != nil {
		t.Fatalf("Reconcile = %d, %v; want -2", n, err)
	}
	if st, _ := s.Stats(); st.InPipe != 1 || st.Drained != 2 {
		t.Errorf("after draining: %+v", st)
	}
}
