//go:build linux

package jobserver

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestPoolNil(t *testing.T) {
	p, err := OpenPool([]string{"PATH=/bin"}, PoolOptions{})
	if p != nil || err != nil {
		t.Fatalf("OpenPool without a jobserver or Serve = %v, %v; want nil, nil", p, err)
	}
	release, err := p.Admit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	release()
	cmd := exec.Command("true")
	if err := p.Prepare(cmd); err != nil || cmd.Env != nil || p.Joined() || p.Jobs() != 0 {
		t.Errorf("nil pool: Prepare %v, Env %q, Joined %v, Jobs %d", err, cmd.Env, p.Joined(), p.Jobs())
	}
	if r, err := p.Close(); err != nil || r != (PoolReport{}) {
		t.Errorf("nil pool Close = %+v, %v", r, err)
	}
}

// A served pool hands out its slots, counts its jobs as the server's
// children, and a joining pool (another process, here through the FIFO
// form) sees the same slots.
func TestPoolServeAndJoin(t *testing.T) {
	p, err := OpenPool(nil, PoolOptions{Serve: true, Slots: 3, FIFO: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Joined() || p.Jobs() != 3 {
		t.Fatalf("served pool: Joined %v, Jobs %d", p.Joined(), p.Jobs())
	}
	var releases []func()
	for range 3 {
		rel, err := p.Admit(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, rel)
	}
	if st, _ := p.server.Stats(); st.Running != 3 || st.InPipe != 0 {
		t.Errorf("three jobs admitted: %+v", st)
	}
	short, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.Admit(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("fourth Admit = %v, want DeadlineExceeded", err)
	}

	cmd := exec.Command("true")
	if err := p.Prepare(cmd); err != nil {
		t.Fatal(err)
	}
	var flags string
	for _, kv := range cmd.Env {
		if v, ok := strings.CutPrefix(kv, "MAKEFLAGS="); ok {
			flags = v
		}
	}
	if !strings.Contains(flags, "fifo:") {
		t.Fatalf("MAKEFLAGS %q, want the FIFO form", flags)
	}
	releases[2]() // a slot for the joiner
	j, err := OpenPool([]string{"MAKEFLAGS=" + flags}, PoolOptions{Serve: true, Slots: 9})
	if err != nil {
		t.Fatal(err)
	}
	if !j.Joined() || j.Jobs() != 3 {
		t.Errorf("joined pool: Joined %v, Jobs %d; want the served 3", j.Joined(), j.Jobs())
	}
	jrel, err := j.Admit(t.Context()) // its implicit slot
	if err != nil {
		t.Fatal(err)
	}
	jrel()
	if r, err := j.Close(); err != nil || r.Slots != 0 {
		t.Errorf("joined Close = %+v, %v", r, err)
	}
	for _, rel := range releases[:2] {
		rel()
	}
	r, err := p.Close()
	if err != nil || r.Slots != 3 || r.ReleaseFailures != 0 {
		t.Errorf("served Close = %+v, %v", r, err)
	}
}

// A jobserver named but unusable is reported once, and the pool goes on
// as if there were none (or serves its own).
func TestPoolUnusable(t *testing.T) {
	env := []string{"MAKEFLAGS= -j4 --jobserver-auth=fifo:/nonexistent/numasteal-fifo"}
	var got []error
	p, err := OpenPool(env, PoolOptions{Unusable: func(err error) { got = append(got, err) }})
	if p != nil || err != nil {
		t.Fatalf("OpenPool = %v, %v; want nil, nil", p, err)
	}
	var ue *UnavailableError
	if len(got) != 1 || !errors.As(got[0], &ue) {
		t.Fatalf("Unusable called with %v, want one *UnavailableError", got)
	}
	got = nil
	p, err = OpenPool(env, PoolOptions{Serve: true, Slots: 2, Unusable: func(err error) { got = append(got, err) }})
	if err != nil || p == nil || p.Joined() || len(got) != 1 {
		t.Fatalf("OpenPool with Serve = %v, %v (Unusable %v); want a served pool", p, err, got)
	}
	p.Close()
}
