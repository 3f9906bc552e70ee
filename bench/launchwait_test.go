package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestProcFields(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rollup")
	text := "00400000-7ffd [rollup]\nRss:     2860 kB\nPss:      895 kB\nPss_Dirty: 894 kB\nPrivate_Dirty:   792 kB\n"
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := procFields(p, "Pss:", "Rss:", "Private_Dirty:"); !slices.Equal(got, []int64{895, 2860, 792}) {
		t.Errorf("procFields = %v, want [895 2860 792]", got)
	}
	if got := procFields(p, "Pss:", "Swap:"); got != nil {
		t.Errorf("a missing field: %v, want nil", got)
	}
	if got := procFields(filepath.Join(dir, "none"), "Pss:"); got != nil {
		t.Errorf("a missing file: %v, want nil", got)
	}
}

func FuzzProcFields(f *testing.F) {
	f.Add("Pss: 12 kB\nThreads:\t4\n")
	f.Add("Pss:\nPss: x\n")
	f.Fuzz(func(t *testing.T, text string) {
		p := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := procFields(p, "Pss:", "Threads:"); got != nil && len(got) != 2 {
			t.Errorf("%d values for 2 fields", len(got))
		}
	})
}

// TestSampleWaiting: a process of the sampled executable blocked reading
// a Unix socket counts, with its threads and memory; none while it runs
// another executable.
func TestSampleWaiting(t *testing.T) {
	if os.Getenv("NUMASTEAL_BENCH_WAIT_HELPER") == "1" {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			os.Exit(2)
		}
		os.Stdout.Write([]byte("ready\n"))
		var b [1]byte
		syscall.Read(fds[0], b[:])
		os.Exit(0)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(exe, "-test.run", "^TestSampleWaiting$")
	c.Env = append(os.Environ(), "NUMASTEAL_BENCH_WAIT_HELPER=1")
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		c.Process.Kill()
		c.Wait()
	}()
	var b [6]byte
	if _, err := out.Read(b[:]); err != nil || !strings.HasPrefix(string(b[:]), "ready") {
		t.Fatalf("helper: %q, %v", b, err)
	}
	var s LaunchWaitSample
	deadline := time.Now().Add(60 * time.Second)
	for s = sampleWaiting(exe); s.Waiting == 0; s = sampleWaiting(exe) {
		if time.Now().After(deadline) {
			t.Fatal("the helper was never seen waiting")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s.Waiting != 1 || s.Threads < 1 || s.MaxThreads != s.Threads || s.PssKiB <= 0 || s.RssKiB < s.PssKiB {
		t.Errorf("sample %+v: want one waiting process with its threads and memory", s)
	}
	if s := sampleWaiting("/nonexistent/exe"); s.Waiting != 0 {
		t.Errorf("another executable: %+v, want none waiting", s)
	}
}
