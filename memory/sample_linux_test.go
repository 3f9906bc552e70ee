package memory

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/numasteal/numasteal/internal/memtest"
)

// TestSampleInLimitedGroup reads a real memory-limited cgroup (v1 or v2,
// whichever this machine delegates): a process in it is seen with the
// group's limit, and the memory it holds is not available.
func TestSampleInLimitedGroup(t *testing.T) {
	const limit = 256 * miB
	g := memtest.NewGroup(t, limit)
	dir := t.TempDir()
	memhog, _ := memtest.BuildMemhog(t, dir)
	src := filepath.Join(dir, "big.c")
	// 200 MiB over 10 s, then held for 10 s: stopped long before it ends.
	if err := os.WriteFile(src, []byte("/* memhog mem=200 ms=20000 */\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := g.Command(exec.Command(memhog, "-c", src, "-o", filepath.Join(dir, "big.o")))
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pid := c.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGKILL)
		syscall.Kill(pid, syscall.SIGCONT)
		c.Wait()
	})
	const held = 40 * miB
	eventually(t, "memhog holding 40 MiB", func() bool { return TreeRSS("/proc", pid) >= held })
	if err := SignalTree("/proc", pid, true); err != nil {
		t.Fatal(err)
	}
	// Its anonymous pages are charged to the group; the pages of its
	// binary may be charged to whoever read them first.
	rss := rssAnon(t, pid)

	s, err := Open("/", pid)
	if err != nil {
		t.Fatal(err)
	}
	if gs := s.Groups(); len(gs) < 2 || gs[0].Dir != g.Dir || gs[0].V2 != g.V2 {
		t.Fatalf("Groups() = %v; want %s first", gs, g.Dir)
	}
	sample, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	file := "memory.limit_in_bytes"
	if g.V2 {
		file = "memory.max"
	}
	t.Logf("group %s, memhog RSS %d MiB: %+v", g.Dir, rss>>20, sample)
	if sample.Limit != limit || sample.LimitFile != filepath.Join("/", g.Dir, file) {
		t.Errorf("Limit %d in %q; want %d in %s", sample.Limit, sample.LimitFile, int64(limit), filepath.Join(g.Dir, file))
	}
	if sample.Available > limit-rss || sample.Available < 0 {
		t.Errorf("Available %d MiB with %d MiB of a %d MiB limit held", sample.Available>>20, rss>>20, limit>>20)
	}
}

// rssAnon returns RssAnon of /proc/PID/status, in bytes.
func rssAnon(t *testing.T, pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "RssAnon:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("RssAnon %q: %v", rest, err)
			}
			return kib << 10
		}
	}
	t.Fatalf("no RssAnon in /proc/%d/status", pid)
	return 0
}
