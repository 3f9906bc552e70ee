//go:build linux

package jobserver

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestElasticUnderMake lends two tokens to a make with no -j of its own:
// it runs at most three jobs at once (its implicit slot and the two
// tokens), and gives both tokens back, which Reclaim then reads out.
func TestElasticUnderMake(t *testing.T) {
	mk := requireMake(t)
	t.Parallel()
	e, err := NewElastic()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if n, err := e.Idle(); err != nil || n != 0 {
		t.Fatalf("new Elastic: Idle() = %d, %v; want 0", n, err)
	}
	if err := e.Lend(2); err != nil {
		t.Fatal(err)
	}
	r, w, err := e.Export()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command(mk, "-f", filepath.Join("testdata", "recipes.mk"), "OUT="+out)
	cmd.ExtraFiles = []*os.File{r, w}
	cmd.Env = setenv(cleanEnv(), "MAKEFLAGS", " -j3 --jobserver-auth=3,4")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	r.Close()
	w.Close()
	if err != nil {
		t.Fatalf("make: %v\n%s", err, stderr.String())
	}
	checkOverlap(t, readIntervals(t, globFiles(t, out)...), 12, 3)
	if n, err := e.Idle(); err != nil || n != 2 {
		t.Fatalf("after make: Idle() = %d, %v; want the 2 tokens back", n, err)
	}
	if n, err := e.Reclaim(5); err != nil || n != 2 {
		t.Fatalf("Reclaim(5) = %d, %v; want 2", n, err)
	}
	if n, err := e.Idle(); err != nil || n != 0 {
		t.Fatalf("after Reclaim: Idle() = %d, %v; want 0", n, err)
	}
}

// TestElasticClient lends tokens to an in-process Client on exported
// descriptors and takes idle ones back.
func TestElasticClient(t *testing.T) {
	e, err := NewElastic()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := e.Export()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	c, err := FromMakeflags("-j4 --jobserver-auth=" + strconv.Itoa(int(r.Fd())) + "," + strconv.Itoa(int(w.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Acquire(t.Context()); err != nil { // the implicit slot
		t.Fatal(err)
	}
	if err := e.Lend(3); err != nil {
		t.Fatal(err)
	}
	tok, err := c.Acquire(t.Context())
	if err != nil || tok.Implicit() {
		t.Fatalf("Acquire = %v, %v; want a token", tok, err)
	}
	if n, _ := e.Reclaim(10); n != 2 {
		t.Fatalf("Reclaim(10) = %d; want the 2 tokens not taken", n)
	}
	if err := c.Release(tok); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.Idle(); n != 1 {
		t.Fatalf("Idle() = %d after Release; want 1", n)
	}
	e.Close()
	if err := e.Lend(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Lend after Close = %v; want ErrClosed", err)
	}
	if e.Close() != nil {
		t.Fatal("second Close failed")
	}
}
