package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe to write from the run and read from
// the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// scrape returns the samples of the exposition at url, by series.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				m[line[:i]] = v
			}
		}
	}
	return m
}

// --metrics serves the runtime's counters and the runner's slots during
// the run, and the build's counters grow as tasks run (process tasks fork
// from goroutines of their own, not as the runtime's Go tasks).
func TestRunServesMetrics(t *testing.T) {
	dir := t.TempDir()
	cmds := writeFile(t, dir, "c.txt", strings.Repeat("sleep 0.05\n", 40))
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- dispatch(context.Background(), []string{"run", "--history=", "-j1", "--progress=none", "--metrics", "127.0.0.1:0", cmds}, &stdout, &stderr)
	}()
	addr := regexp.MustCompile(`metrics at (http://\S+/metrics)`)
	var url string
	for deadline := time.Now().Add(20 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := addr.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		t.Fatalf("no metrics address on stderr: %q", stderr.String())
	}
	first := scrape(t, url)
	var second map[string]float64
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		second = scrape(t, url)
		if second[`numasteal_build_tasks_done{outcome="succeeded"}`] > first[`numasteal_build_tasks_done{outcome="succeeded"}`] {
			break
		}
	}
	for _, name := range []string{"numasteal_tasks_run_total", "numasteal_tasks_injected_total", "numasteal_workers", "numasteal_process_slots"} {
		if _, ok := second[name]; !ok {
			t.Errorf("%s not served", name)
		}
	}
	// The build's progress: 40 tasks, done ones counted as they end.
	if got := second[`numasteal_build_tasks_done{outcome="succeeded"}`]; got < 1 || got > 40 {
		t.Errorf(`build_tasks_done{outcome="succeeded"} = %v during the run, want 1 to 40`, got)
	}
	if second["numasteal_process_slots"] != 1 {
		t.Errorf("process_slots = %v, want 1 (-j1)", second["numasteal_process_slots"])
	}
	if a, b := first[`numasteal_build_tasks_done{outcome="succeeded"}`], second[`numasteal_build_tasks_done{outcome="succeeded"}`]; !(b > a) {
		t.Errorf(`build_tasks_done{outcome="succeeded"} did not grow during the run: %v then %v`, a, b)
	}
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("metrics still served after the run")
	}
}

// numasteal serve --metrics serves the daemon's slots and memory, asking
// its own socket at each scrape, and stops with the daemon.
func TestServeServesMetrics(t *testing.T) {
	dir := t.TempDir()
	sockDir := filepath.Join(dir, "ns")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NUMASTEAL_SOCKET", filepath.Join(sockDir, "sock"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"serve", "--slots", "3", "--idle", "0", "--metrics", "127.0.0.1:0"}, &stdout, &stderr)
	}()
	addr := regexp.MustCompile(`metrics at (http://\S+/metrics)`)
	var url string
	var slots float64
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if url == "" {
			if m := addr.FindStringSubmatch(stderr.String()); m != nil {
				url = m[1]
			}
			continue
		}
		// The metrics may be up before the daemon's socket: then a
		// scrape has no daemon series yet.
		if slots = scrape(t, url)["numasteal_daemon_slots"]; slots != 0 {
			break
		}
	}
	if slots != 3 {
		t.Fatalf("daemon_slots = %v (url %q), want 3; stderr:\n%s", slots, url, stderr.String())
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Errorf("serve exit %d; stderr:\n%s", code, stderr.String())
	}
}
