//go:build linux

package daemon

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/numasteal/numasteal/launch"
)

// startServer runs a daemon of cfg (its Paths filled in: a socket in a
// new directory) until the test ends, and returns its socket. Once the
// test's connections are closed and the daemon has stopped, no goroutine
// of it is left.
func startServer(t *testing.T, cfg Config) (s *Server, socket string) {
	t.Helper()
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) })
	dir, err := os.MkdirTemp("", "nsd-") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg.Paths = launch.PathsFromEnv(func(k string) string {
		if k == "NUMASTEAL_SOCKET" {
			return filepath.Join(dir, "sock")
		}
		return ""
	})
	cfg.Idle = -1
	s, err = Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return s, cfg.Paths.Socket
}

// client is a connection to the daemon that writes requests as given,
// in pieces if need be, and reads the replies.
type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, socket string) *client {
	t.Helper()
	c, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

func (cl *client) write(s string) {
	cl.t.Helper()
	if _, err := cl.c.Write([]byte(s)); err != nil {
		cl.t.Fatal(err)
	}
}

func (cl *client) send(verb string, kv ...string) {
	cl.t.Helper()
	cl.write(string(launch.NewMsg(verb, kv...).Append(nil)))
}

func (cl *client) expect(verb string) launch.Msg {
	cl.t.Helper()
	line, err := cl.r.ReadSlice('\n')
	if err != nil {
		cl.t.Fatalf("reading a reply: %v; want %s", err, verb)
	}
	m, err := launch.ParseMsg(line)
	if err != nil || m.Verb != verb {
		cl.t.Fatalf("reply %v, %v; want %s", m, err, verb)
	}
	return m
}

// TestSessionSilentConnection: a connection that says nothing does not
// hold up the accept loop: another launcher gets its grant, and the
// silent one is served when it speaks.
func TestSessionSilentConnection(t *testing.T) {
	_, socket := startServer(t, Config{Slots: 1, Mem: 1 << 30})
	silent := dial(t, socket)
	c := dial(t, socket)
	c.send("acquire", "kind", "compile", "build", "b", "out", "/x/a.o")
	c.expect("grant")
	silent.send("ping")
	silent.expect("pong")
}

// TestSessionRequestInPieces: a first request that arrives in pieces, or
// longer than the connection's buffer, is read whole wherever it is read
// (by the accept loop or the connection's goroutine).
func TestSessionRequestInPieces(t *testing.T) {
	_, socket := startServer(t, Config{Slots: 2, Mem: 1 << 30})
	line := string(launch.NewMsg("acquire", "kind", "compile", "build", "b", "out", "/x/a.o").Append(nil))
	for _, cut := range []int{1, 4, len(line) / 2, len(line) - 1} {
		c := dial(t, socket)
		c.write(line[:cut])
		c.write(line[cut:])
		c.expect("grant")
		c.c.Close()
	}
	c := dial(t, socket)
	c.send("acquire", "kind", "compile", "build", "b", "out", "/x/"+strings.Repeat("d", 3*connBuffer)+".o")
	c.expect("grant")
}

// TestSessionWaitsThenGranted: with the one slot taken, the second
// acquire waits (served by its goroutine, not the accept loop) and is
// granted when the first job reports its end; a launcher that goes while
// it waits leaves no job behind.
func TestSessionWaitsThenGranted(t *testing.T) {
	s, socket := startServer(t, Config{Slots: 1, Mem: 1 << 30})
	first, second, gone := dial(t, socket), dial(t, socket), dial(t, socket)
	first.send("acquire", "kind", "compile", "build", "b", "out", "/x/1.o")
	first.expect("grant")
	gone.send("acquire", "kind", "compile", "build", "b", "out", "/x/2.o")
	second.send("acquire", "kind", "compile", "build", "b", "out", "/x/3.o")
	waitFor(t, "two jobs waiting", func() bool { return waiting(s.Status()) == 2 })
	gone.c.Close()
	waitFor(t, "one job waiting", func() bool { return waiting(s.Status()) == 1 })
	first.send("done", "rss_kib", "1000", "wall_us", "1", "status", "0")
	first.expect("ok")
	second.expect("grant")
	if st := s.Status(); len(st.Running) != 1 || waiting(st) != 0 {
		t.Fatalf("status: %d running, %d waiting; want 1 and 0", len(st.Running), waiting(st))
	}
}

// TestSessionHandoff: for a launcher that asks (atgrant=1), a handoff
// grant is the handoff itself: the daemon says so, closes the connection
// and keeps the slot for the launcher's process; for one that does not,
// the slot becomes the process's at its "exec".
func TestSessionHandoff(t *testing.T) {
	for _, atGrant := range []bool{true, false} {
		t.Run(fmt.Sprintf("atgrant=%v", atGrant), func(t *testing.T) {
			s, socket := startServer(t, Config{Slots: 1, Mem: 1 << 30})
			c := dial(t, socket)
			kv := []string{"kind", "compile", "build", "b", "cmd", "cc", "handoff", "1"}
			if atGrant {
				kv = append(kv, "atgrant", "1")
			}
			c.send("acquire", kv...)
			g := c.expect("grant")
			if v, _ := g.Get("handoff"); v != "1" {
				t.Fatalf("grant %v: want handoff=1 (an output-less job on an idle daemon)", g)
			}
			if v, _ := g.Get("atgrant"); (v == "1") != atGrant {
				t.Errorf("grant %v: atgrant %q, want it set %v", g, v, atGrant)
			}
			if !atGrant {
				c.send("exec")
			}
			if b, err := c.r.ReadByte(); err != io.EOF {
				t.Fatalf("after the handoff the daemon sent %q (%v), want the end of the connection", b, err)
			}
			// The slot is the process's: this test's, which runs on.
			if st := s.Status(); len(st.Running) != 1 {
				t.Errorf("running %+v, want the one job handed off", st.Running)
			}
		})
	}
}

// TestLearnHandedOff: the samples of a handed-off job raise the peak
// stored for its output, never lower it; a measured peak replaces it.
func TestLearnHandedOff(t *testing.T) {
	s, _ := startServer(t, Config{Slots: 1, Mem: 1 << 30})
	s.mu.Lock()
	defer s.mu.Unlock()
	j := &job{build: "b", kind: "compile", out: "/x/a.o"}
	for _, step := range []struct {
		reportedKiB, sampled, want int64
	}{
		{300 << 10, 0, 300 << 20}, // measured
		{0, 100 << 20, 300 << 20}, // handed off, sampled below the peak
		{0, 400 << 20, 400 << 20}, // handed off, sampled above it
		{200 << 10, 0, 200 << 20}, // measured again
	} {
		j.ended.Peak = step.sampled
		s.learnLocked(j, step.reportedKiB)
		if got, _ := s.rss.lookup(j.out); got != step.want {
			t.Errorf("after reported %d KiB, sampled %d: stored %d, want %d", step.reportedKiB, step.sampled, got, step.want)
		}
	}
}

// TestSessionGrantRace: a job admitted by another session's "done" while
// its own session is only starting to wait for it is served whole: its
// launcher's report is read and answered, however the admission and the
// session's look at it interleave (the admission wakes the session's
// read after marking the job granted; the session must not have that
// wake cut its later reads short). Two launchers take turns on one
// slot, each reporting its end: the one waiting is often admitted by the
// other's report while its session is still starting.
func TestSessionGrantRace(t *testing.T) {
	s, socket := startServer(t, Config{Slots: 1, Mem: 1 << 30})
	const launchers, rounds = 2, 1000
	errs := make(chan error, launchers)
	for l := range launchers {
		go func() {
			errs <- func() error {
				for r := range rounds {
					c, err := net.Dial("unix", socket)
					if err != nil {
						return err
					}
					br := bufio.NewReader(c)
					expect := func(verb string) error {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return fmt.Errorf("launcher %d round %d: reading the %s: %w", l, r, verb, err)
						}
						m, err := launch.ParseMsg(line)
						if err != nil || m.Verb != verb {
							return fmt.Errorf("launcher %d round %d: reply %v (%v), want %s", l, r, m, err, verb)
						}
						return nil
					}
					out := fmt.Sprintf("/x/%d-%d.o", l, r)
					_, err = c.Write(launch.NewMsg("acquire", "kind", "compile", "build", "b", "out", out).Append(nil))
					if err == nil {
						err = expect("grant")
					}
					if err == nil {
						_, err = c.Write(launch.NewMsg("done", "rss_kib", "1000", "wall_us", "1", "status", "0").Append(nil))
					}
					if err == nil {
						err = expect("ok")
					}
					c.Close()
					if err != nil {
						return err
					}
				}
				return nil
			}()
		}()
	}
	for range launchers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if st := s.Status(); st.Done != launchers*rounds {
		t.Errorf("the daemon counts %d jobs done, want %d", st.Done, launchers*rounds)
	}
}
