package runtime

import (
	"bytes"
	"context"
	goruntime "runtime"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// A CPU profile of tasks of a named group has samples labeled with its name
// and the tasks' kind; an unnamed group's tasks have none.
func TestCPUProfileLabelsNamedGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("profiles for up to seconds")
	}
	rt, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	spin := func(d time.Duration) Func {
		return func(c *Ctx) error {
			// The named group's children (Ctx.Group) carry the name too.
			g := c.Group()
			c.Go(g, func(*Ctx) error {
				burnFor(d)
				return nil
			})
			burnFor(d)
			return c.Wait(g)
		}
	}
	// Long enough for samples at 100 Hz on a busy machine; longer again
	// when a loaded machine gave the workers too little CPU.
	for _, d := range []time.Duration{300 * time.Millisecond, 2 * time.Second} {
		var buf bytes.Buffer
		if err := pprof.StartCPUProfile(&buf); err != nil {
			t.Skipf("CPU profiling unavailable: %v", err)
		}
		named := rt.Group(context.Background()).SetName("parse")
		unnamed := rt.Group(context.Background())
		for range rt.Workers() {
			named.Go(spin(d))
			unnamed.Go(spin(d / 3))
		}
		errN, errU := named.Wait(), unnamed.Wait()
		pprof.StopCPUProfile()
		if errN != nil || errU != nil {
			t.Fatal(errN, errU)
		}
		p, err := profile.Parse(&buf)
		if err != nil {
			t.Fatal(err)
		}
		labeled := 0
		for _, s := range p.Sample {
			if g := s.Label["group"]; len(g) > 0 {
				if g[0] != "parse" || len(s.Label["kind"]) != 1 || s.Label["kind"][0] != "go" {
					t.Fatalf("sample labels %v, want group=parse kind=go", s.Label)
				}
				labeled++
			}
		}
		if labeled > 0 {
			return
		}
		t.Logf("%v: no sample of %d labeled group=parse", d, len(p.Sample))
	}
	t.Error("no sample labeled group=parse")
}

// burnFor spins the CPU for d.
func burnFor(d time.Duration) int {
	n := 0
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := range 1000 {
			n ^= i
		}
	}
	goruntime.KeepAlive(n) // callers drop the result: the loop must stay
	return n
}

func TestGroupName(t *testing.T) {
	rt, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	g := rt.Group(context.Background())
	if g.Name() != "" {
		t.Errorf("Name() = %q before SetName", g.Name())
	}
	if g.SetName("link").Name() != "link" {
		t.Errorf("Name() = %q, want link", g.Name())
	}
	var child string
	g.Go(func(c *Ctx) error { child = c.Group().Name(); return nil })
	if err := g.Wait(); err != nil || child != "link" {
		t.Errorf("Ctx.Group's name %q, err %v; want link", child, err)
	}
	if g.SetName("").Name() != "" {
		t.Errorf("SetName(\"\") kept %q", g.Name())
	}
}
