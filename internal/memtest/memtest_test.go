package memtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestPlainMakeIsOOMKilled is the problem the memory work solves, shown on
// this machine: make -j2 of compiles that each need more than half of the
// group's limit has its compiles OOM-killed, and objects are missing.
func TestPlainMakeIsOOMKilled(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("SKIP: no make")
	}
	g := NewGroup(t, 400<<20)
	dir := t.TempDir()
	_, cc := BuildMemhog(t, dir)
	src := filepath.Join(dir, "src")
	os.Mkdir(src, 0o755)
	objs := Project(t, src, []int{250, 250, 250, 250}, 800)
	c := g.Command(exec.Command("make", "-k", "-j2", "CC="+cc))
	c.Dir = src
	out, err := c.CombinedOutput()
	if err == nil {
		t.Fatalf("make -j2 succeeded under a limit of 400 MiB with 250 MiB compiles:\n%s", out)
	}
	missing := 0
	for _, o := range objs {
		if _, err := os.Stat(filepath.Join(src, o)); err != nil {
			missing++
		}
	}
	t.Logf("cgroup %s (v2 %v): %d OOM kills, %d of %d objects missing", g.Dir, g.V2, g.OOMKills(), missing, len(objs))
	if g.OOMKills() == 0 || missing == 0 {
		t.Errorf("want OOM kills and missing objects; got %d kills, %d missing\n%s", g.OOMKills(), missing, out)
	}
}
