package launch

import (
	"bufio"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"go.uber.org/goleak"
)

// fakeDaemon listens on a socket in a new directory and answers each
// connection with answer(request, number of the connection from 0); a
// nil answer closes the connection unanswered. It returns the paths.
func fakeDaemon(t *testing.T, answer func(req Msg, conn int) *Msg) Paths {
	dir, err := os.MkdirTemp("", "nsa-") // short: a socket path is at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var held []net.Conn // the connections that hold a slot
	go func() {
		defer close(done)
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, err := bufio.NewReader(c).ReadSlice('\n')
			if err == nil {
				if req, err := ParseMsg(line); err == nil {
					if m := answer(req, n); m != nil {
						c.Write(m.Append(nil))
						held = append(held, c)
						continue
					}
				}
			}
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		os.RemoveAll(dir)
	})
	return PathsFromEnv(func(k string) string {
		if k == "NUMASTEAL_SOCKET" {
			return sock
		}
		return ""
	})
}

// TestAcquirer: a request is sent before its answer is read; a connection
// that breaks before the answer is retried on a new one; a build that is
// gone and a refusal are errors; and the launcher's side starts no
// goroutine (none is left, and none runs while it waits).
func TestAcquirer(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	req := NewMsg("acquire", "kind", "compile", "out", "/x.o", "pid", "1", "cmd", "cc", "handoff", "1")
	grant := NewMsg("grant", "job", "7", "cpu", "0", "node", "0", "handoff", "1")
	tests := []struct {
		name   string
		answer func(Msg, int) *Msg
		job    string
		err    error
	}{
		{"grant", func(m Msg, _ int) *Msg { return &grant }, "7", nil},
		{"broken twice, then a grant", func(m Msg, n int) *Msg {
			if n < 2 {
				return nil
			}
			return &grant
		}, "7", nil},
		{"always broken", func(Msg, int) *Msg { return nil }, "", ErrNoDaemon},
		{"build gone", func(Msg, int) *Msg {
			m := NewMsg("error", "code", "gone", "msg", "make ended")
			return &m
		}, "", errBuildGone},
		{"refused", func(Msg, int) *Msg {
			m := NewMsg("error", "code", "busy", "msg", "no")
			return &m
		}, "", errRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan Msg, acquireAttempts)
			during := make(chan int, acquireAttempts)
			p := fakeDaemon(t, func(m Msg, n int) *Msg {
				got <- m
				during <- runtime.NumGoroutine()
				return tt.answer(m, n)
			})
			before := runtime.NumGoroutine()
			a := acquirer{paths: p, serve: []string{}, getenv: func(string) string { return "" }}
			if err := a.send(req, false); err != nil {
				t.Fatal(err)
			}
			s, err := a.wait()
			for len(during) > 0 {
				if n := <-during; n > before {
					t.Errorf("%d goroutines while the request waited, %d before it", n, before)
				}
			}
			if !errors.Is(err, tt.err) {
				t.Fatalf("wait: %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			defer s.conn.Close()
			for len(got) > 0 {
				if m := <-got; m.String() != req.String() {
					t.Errorf("the daemon got %q, want %q", m, req)
				}
			}
			if s.job != tt.job {
				t.Errorf("job %q, want %q", s.job, tt.job)
			}
		})
	}
}

// TestAcquirerNoDaemon: with no daemon, a send that may not start one
// says so, and one that may but has no way to start it fails.
func TestAcquirerNoDaemon(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := PathsFromEnv(func(k string) string {
		if k == "NUMASTEAL_SOCKET" {
			return filepath.Join(dir, "sock")
		}
		return ""
	})
	a := acquirer{paths: p, serve: []string{}, getenv: func(string) string { return "" }}
	if err := a.send(NewMsg("acquire"), false); !errors.Is(err, errNotRunning) {
		t.Errorf("send without starting: %v, want errNotRunning", err)
	}
	if err := a.send(NewMsg("acquire"), true); !errors.Is(err, ErrNoDaemon) {
		t.Errorf("send with nothing to start: %v, want ErrNoDaemon", err)
	}
}
