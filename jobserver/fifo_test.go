//go:build linux

package jobserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFIFOServerAndClientProcess: a FIFO server with 3 slots and a client
// process, both ours, running 12 jobs admitted at once.
func TestFIFOServerAndClientProcess(t *testing.T) {
	t.Parallel()
	s, err := NewServer(3, WithFIFO(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := filepath.Join(t.TempDir(), "intervals")
	cmd := helperCmd(t, "jobs", envJobs+"=12", envOut+"="+out)
	if err := s.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if len(cmd.ExtraFiles) != 0 {
		t.Errorf("FIFO form passed %d descriptors", len(cmd.ExtraFiles))
	}
	if mf := makeflagsFromEnv(cmd.Env); mf != " -j3 --jobserver-auth=fifo:"+s.Auth().Path {
		t.Errorf("MAKEFLAGS = %q", mf)
	}
	if err := s.Wait(cmd); err != nil {
		t.Fatal(err)
	}
	checkOverlap(t, readIntervals(t, out), 12, 3)
}

// TestFIFOInProcess: a second client on the FIFO counts against the same
// tokens, and Close removes the FIFO.
func TestFIFOInProcess(t *testing.T) {
	t.Parallel()
	s, err := NewServer(3, WithFIFO(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	path := s.Auth().Path
	if !strings.HasPrefix(s.Auth().Option, "--jobserver-auth=fifo:") {
		t.Errorf("Option = %q", s.Auth().Option)
	}
	c, err := FromMakeflags("-j3 --jobserver-auth=fifo:" + path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var toks []Token
	for range 3 { // implicit + both tokens
		tok, err := c.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		toks = append(toks, tok)
	}
	if !toks[0].Implicit() || toks[1].Implicit() || c.Held() != 2 {
		t.Errorf("tokens %+v, held %d", toks, c.Held())
	}
	if st, _ := s.Stats(); st.InPipe != 0 || st.Out != 2 {
		t.Errorf("server sees %+v", st)
	}
	// The server's client has only its implicit slot left.
	sc := s.Client()
	imp, err := sc.Acquire(ctx)
	if err != nil || !imp.Implicit() {
		t.Fatalf("server implicit = %+v, %v", imp, err)
	}
	short, cancel := contextTimeout(t, 50*time.Millisecond)
	defer cancel()
	if _, err := sc.Acquire(short); err == nil {
		t.Fatal("acquired a fourth token from a 3-slot jobserver")
	}
	if err := c.Close(); err != nil { // returns both tokens
		t.Fatal(err)
	}
	tok, err := sc.Acquire(ctx)
	if err != nil || tok.Implicit() {
		t.Fatalf("after the client closed: %+v, %v", tok, err)
	}
	sc.Release(tok)
	sc.Release(imp)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("FIFO directory left after Close: %v", err)
	}
}
