package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCcachePrefix: the launcher chained after ccache the way distcc is,
// ccache running "numasteal-launch gcc ..." for the compiles it does not
// find in its cache and for the calls it does not cache (a link). A miss
// is one job of the daemon; a hit runs no compiler and asks the daemon
// nothing; a failing compile's status and diagnostics reach ccache's
// caller through both. CCACHE_PREFIX is the environment's spelling of
// ccache's prefix_command setting; both are covered.
func TestCcachePrefix(t *testing.T) {
	need(t, "ccache", "gcc")
	t.Run("CCACHE_PREFIX", func(t *testing.T) {
		e := newEnv(t, "")
		testCcache(t, e, "", "CCACHE_PREFIX="+e.launcher())
	})
	t.Run("prefix_command", func(t *testing.T) {
		e := newEnv(t, "")
		testCcache(t, e, "prefix_command = "+e.launcher()+"\n")
	})
}

// ccacheIn returns a maker of ccache commands with a cache of its own,
// configured by conf (the contents of ccache.conf) and vars, run in src
// (new, holding x.c and bad.c).
func ccacheIn(t *testing.T, e *env, conf string, vars ...string) (ccache func(args ...string) *exec.Cmd, src string) {
	src = t.TempDir()
	ccdir := t.TempDir()
	confPath := filepath.Join(ccdir, "ccache.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(src, "x.c"), []byte("int f(int x) { return x * 3 + 1; }\n"), 0o644)
	os.WriteFile(filepath.Join(src, "bad.c"), []byte("int f(int x) { return x * ; }\n"), 0o644)

	// Only this test's ccache settings: none of the caller's CCACHE_*
	// variables (CCACHE_DISABLE, a CCACHE_PREFIX of its own), and with
	// CCACHE_CONFIGPATH set ccache reads neither /etc/ccache.conf nor the
	// user's configuration.
	var base []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CCACHE_") {
			base = append(base, kv)
		}
	}
	base = append(base, e.vars...)
	base = append(base, "CCACHE_DIR="+ccdir, "CCACHE_CONFIGPATH="+confPath)
	base = append(base, vars...)
	return func(args ...string) *exec.Cmd {
		c := exec.Command("ccache", args...)
		c.Dir = src
		c.Env = base
		return c
	}, src
}

// testCcache runs the miss, the hit, the failing compile and the link
// with a cache of its own, configured by conf (the contents of
// ccache.conf) and vars.
func testCcache(t *testing.T, e *env, conf string, vars ...string) {
	ccache, src := ccacheIn(t, e, conf, vars...)
	stats := func() map[string]int {
		out, err := ccache("--print-stats").Output()
		if err != nil {
			t.Fatalf("ccache --print-stats: %v", err)
		}
		m := map[string]int{}
		for _, line := range strings.Split(string(out), "\n") {
			if k, v, ok := strings.Cut(line, "\t"); ok {
				m[k], _ = strconv.Atoi(v)
			}
		}
		return m
	}
	obj := filepath.Join(src, "x.o")

	// The miss: ccache preprocesses by itself, then compiles through the
	// launcher, which starts the daemon and is admitted once.
	out := run(t, ccache("gcc", "-c", "x.c", "-o", "x.o"))
	if strings.Contains(out, "numasteal") {
		t.Errorf("the compile through ccache printed the launcher's messages:\n%s", out)
	}
	compiled, err := os.ReadFile(obj)
	if err != nil {
		t.Fatalf("the miss wrote no object: %v", err)
	}
	if s := stats(); s["cache_miss"] != 1 {
		t.Fatalf("ccache counted %d misses, want 1: %v", s["cache_miss"], s)
	}
	if got := e.done(); got != "1" {
		t.Fatalf("the daemon admitted %s jobs for the miss, want 1", got)
	}

	// The hit: the object comes back from the cache, and no compile, so no
	// launcher, runs.
	if err := os.Remove(obj); err != nil {
		t.Fatal(err)
	}
	out = run(t, ccache("gcc", "-c", "x.c", "-o", "x.o"))
	if out != "" {
		t.Errorf("the hit printed:\n%s", out)
	}
	if s := stats(); s["direct_cache_hit"]+s["preprocessed_cache_hit"] != 1 || s["cache_miss"] != 1 {
		t.Fatalf("ccache's statistics after the second compile are not one miss and one hit: %v", s)
	}
	if got, err := os.ReadFile(obj); err != nil || !bytes.Equal(got, compiled) {
		t.Errorf("the hit did not put back the object the miss compiled (read: %v)", err)
	}
	if got := e.done(); got != "1" {
		t.Errorf("the daemon admitted %s jobs after the hit, want still 1", got)
	}

	// The failing compile: gcc's status and its diagnostics on stderr
	// pass through the launcher and ccache. ccache caches no failure, so
	// the same compile again fails the same way, through the daemon again.
	for i, wantDone := range []string{"2", "3"} {
		c := ccache("gcc", "-c", "bad.c", "-o", "bad.o")
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		err := c.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("failing compile %d: got %v, want exit status 1 (gcc's)\nstderr:\n%s", i+1, err, stderr.String())
		}
		if diag := stderr.String(); !strings.Contains(diag, "bad.c:1:") || !strings.Contains(diag, "error") {
			t.Errorf("failing compile %d: gcc's diagnostic is not on stderr:\nstderr:\n%s\nstdout:\n%s", i+1, diag, stdout.String())
		}
		if _, err := os.Stat(filepath.Join(src, "bad.o")); err == nil {
			t.Errorf("failing compile %d left bad.o", i+1)
		}
		if s := stats(); s["compile_failed"] != i+1 {
			t.Errorf("ccache counted %d failed compiles, want %d: %v", s["compile_failed"], i+1, s)
		}
		if got := e.done(); got != wantDone {
			t.Errorf("after failing compile %d the daemon admitted %s jobs in all, want %s", i+1, got, wantDone)
		}
	}

	// A link is a call ccache does not cache: it runs it through the
	// prefix as it is, so the link takes a slot too.
	run(t, ccache("gcc", "-shared", "x.o", "-o", "x.so"))
	if _, err := os.Stat(filepath.Join(src, "x.so")); err != nil {
		t.Errorf("the link wrote nothing: %v", err)
	}
	if s := stats(); s["called_for_link"] != 1 {
		t.Errorf("ccache counted %d links, want 1: %v", s["called_for_link"], s)
	}
	if got := e.done(); got != "4" {
		t.Errorf("after the link the daemon admitted %s jobs in all, want 4", got)
	}
}

// TestCcacheDaemonDownWarning: when no daemon can be started, the
// launcher under ccache warns on the terminal and in the log, never on the
// stderr ccache stores with the object and would print on every hit.
func TestCcacheDaemonDownWarning(t *testing.T) {
	need(t, "ccache", "gcc")
	e := newEnv(t, "")
	ccache, src := ccacheIn(t, e, "", "CCACHE_PREFIX="+e.launcher(), "NUMASTEAL_BIN=/nonexistent/numasteal")
	const warning = "running commands of this build directly"
	for _, what := range []string{"miss", "hit"} {
		if out := run(t, ccache("gcc", "-c", "x.c", "-o", "x.o")); strings.Contains(out, warning) {
			t.Errorf("the %s printed the launcher's warning:\n%s", what, out)
		}
		if err := os.Remove(filepath.Join(src, "x.o")); err != nil {
			t.Fatalf("the %s wrote no object: %v", what, err)
		}
	}
	if b, _ := os.ReadFile(e.sock + ".log"); !strings.Contains(string(b), warning) {
		t.Errorf("the daemon's log has no warning:\n%s", b)
	}
}
