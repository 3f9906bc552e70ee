//go:build linux

package jobserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Environment of the helper process (the test binary run as a child).
const (
	envHelper = "JOBSERVER_TEST_HELPER" // mode: "jobs", "hog" or "wait"
	envOut    = "JOBSERVER_TEST_OUT"    // jobs: file for the intervals
	envJobs   = "JOBSERVER_TEST_JOBS"   // jobs: how many
)

// TestHelperProcess is not a test: it is the child process of the tests
// that need a jobserver client in another process.
//
//	jobs: run $JOBSERVER_TEST_JOBS jobs of 0.3 s, all admitted at once, each
//	      holding a slot; write "start end" lines (ns) to $JOBSERVER_TEST_OUT.
//	hog:  take every slot MAKEFLAGS' -jN allows, print "held K" (K tokens),
//	      then wait to be killed.
//	wait: block until stdin closes.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(envHelper)
	if mode == "" {
		t.Skip("helper process only")
	}
	if err := helperMain(mode); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

func helperMain(mode string) error {
	if mode == "wait" {
		_, err := io.Copy(io.Discard, os.Stdin)
		return err
	}
	c, err := FromEnv(os.Environ())
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := context.Background()
	switch mode {
	case "hog":
		for range c.Auth().Jobs {
			if _, err := c.Acquire(ctx); err != nil {
				return err
			}
		}
		fmt.Printf("held %d\n", c.Held())
		time.Sleep(time.Minute)
		return nil
	case "jobs":
		n, err := strconv.Atoi(os.Getenv(envJobs))
		if err != nil {
			return err
		}
		ivs := make([]interval, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				tok, err := c.Acquire(ctx)
				if err != nil {
					errs[i] = err
					return
				}
				ivs[i].start = time.Now().UnixNano()
				time.Sleep(300 * time.Millisecond)
				ivs[i].end = time.Now().UnixNano()
				errs[i] = c.Release(tok)
			})
		}
		wg.Wait()
		var b strings.Builder
		for i, iv := range ivs {
			if errs[i] != nil {
				return errs[i]
			}
			fmt.Fprintf(&b, "%d %d\n", iv.start, iv.end)
		}
		return os.WriteFile(os.Getenv(envOut), []byte(b.String()), 0o644)
	}
	return fmt.Errorf("unknown mode %q", mode)
}

// helperCmd returns a command running the test binary as a helper.
func helperCmd(t *testing.T, mode string, extraEnv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(cleanEnv(), envHelper+"="+mode)
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.Stderr = os.Stderr
	return cmd
}

// cleanEnv is os.Environ() without make's variables, so that a test run
// under make does not leak the outer jobserver into the children.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEFILES", "GNUMAKEFLAGS", envHelper:
			continue
		}
		env = append(env, kv)
	}
	return env
}

// interval is one job's run time.
type interval struct{ start, end int64 }

// maxOverlap returns the largest number of intervals running at one instant;
// an interval ending at the instant another starts does not overlap it.
func maxOverlap(ivs []interval) int {
	type ev struct {
		at    int64
		delta int
	}
	evs := make([]ev, 0, 2*len(ivs))
	for _, iv := range ivs {
		evs = append(evs, ev{iv.start, +1}, ev{iv.end, -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].at != evs[j].at {
			return evs[i].at < evs[j].at
		}
		return evs[i].delta < evs[j].delta // ends first
	})
	cur, best := 0, 0
	for _, e := range evs {
		cur += e.delta
		best = max(best, cur)
	}
	return best
}

// readIntervals parses "start end" lines (seconds with a fraction, or
// integer nanoseconds) from the files of dir.
func readIntervals(t *testing.T, paths ...string) []interval {
	t.Helper()
	var ivs []interval
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var s, e string
			if _, err := fmt.Sscan(sc.Text(), &s, &e); err != nil {
				t.Fatalf("%s: %q: %v", p, sc.Text(), err)
			}
			ivs = append(ivs, interval{parseTime(t, s), parseTime(t, e)})
		}
		f.Close()
	}
	return ivs
}

// parseTime parses "1700000000.123456789" (date +%s.%N) or nanoseconds.
func parseTime(t *testing.T, s string) int64 {
	t.Helper()
	sec, frac, ok := strings.Cut(s, ".")
	if !ok {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("time %q: %v", s, err)
		}
		return n
	}
	a, err1 := strconv.ParseInt(sec, 10, 64)
	b, err2 := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("time %q: bad", s)
	}
	return a*1e9 + b
}

// globFiles returns the files of dir.
func globFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
