// Package memtest gives the memory tests what they need to be real: a
// memory-limited cgroup of their own (cgroup v2 where the machine
// delegates the memory controller, else the v1 memory hierarchy), the
// compiler memhog that really allocates, and a make project of its
// compiles. A test never reaches the machine-wide OOM killer: the limit
// is its own group's.
package memtest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numasteal/numasteal/topology"
)

// Group is a memory-limited cgroup made for one test.
type Group struct {
	// Dir is the cgroup's directory; V2 says in which hierarchy.
	Dir string
	V2  bool
	// Limit is its memory limit in bytes.
	Limit int64
}

// NewGroup makes a cgroup limited to limit bytes, below the test's own
// memory cgroup, and removes it (killing what is left in it) when the
// test ends. Where no memory cgroup can be made (not root and no
// delegated subtree, or no memory controller) the test is skipped with
// the reason, except under CI=true on a machine that has a memory
// controller, where that is a failure.
func NewGroup(t testing.TB, limit int64) *Group {
	t.Helper()
	g, err := newGroup(limit, fmt.Sprintf("numasteal-memtest-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err != nil {
		if os.Getenv("CI") == "true" && hasController() {
			t.Fatalf("memtest: this machine has a memory controller but the test cannot make a cgroup: %v", err)
		}
		t.Skipf("SKIP: no memory cgroup can be made here: %v", err)
	}
	t.Cleanup(func() { g.remove() })
	return g
}

func hasController() bool {
	b, _ := os.ReadFile("/proc/self/cgroup")
	if bytes.Contains(b, []byte(":memory:")) {
		return true
	}
	c, _ := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	return slices.Contains(strings.Fields(string(c)), "memory")
}

func newGroup(limit int64, name string) (*Group, error) {
	groups, err := topology.MemoryCgroups("/", 0)
	if err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		return nil, errors.New("no memory controller in any hierarchy of this process")
	}
	own := groups[0]
	g := &Group{V2: own.V2, Limit: limit}
	parent := own.Dir
	if own.V2 {
		// v2's rule of no internal processes: a group with processes
		// cannot give controllers to children. Make a sibling-free leaf
		// below a group of our own where the memory controller is on.
		if err := enable(parent); err != nil {
			return nil, fmt.Errorf("enabling the memory controller in %s: %w", parent, err)
		}
	}
	g.Dir = filepath.Join(parent, name)
	if err := os.Mkdir(g.Dir, 0o755); err != nil {
		return nil, err
	}
	file := "memory.limit_in_bytes"
	if g.V2 {
		file = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(g.Dir, file), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		os.Remove(g.Dir)
		return nil, err
	}
	if g.V2 {
		os.WriteFile(filepath.Join(g.Dir, "memory.swap.max"), []byte("0"), 0o644)
	} else {
		os.WriteFile(filepath.Join(g.Dir, "memory.memsw.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0o644)
		os.WriteFile(filepath.Join(g.Dir, "memory.swappiness"), []byte("0"), 0o644)
	}
	return g, nil
}

// enable turns the memory controller on for dir's children.
func enable(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	if slices.Contains(strings.Fields(string(b)), "memory") {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory"), 0o644)
}

// Command returns cmd made to start inside the group: a shell moves
// itself into the group, then execs the command, so that nothing of it
// runs outside the limit. cmd.Path and cmd.Args are replaced.
func (g *Group) Command(cmd *exec.Cmd) *exec.Cmd {
	script := `echo $$ > "$0" && exec "$@"`
	args := append([]string{"sh", "-c", script, filepath.Join(g.Dir, "cgroup.procs")}, cmd.Args...)
	if cmd.Path != "" && filepath.IsAbs(cmd.Path) {
		args[4] = cmd.Path
	}
	sh, _ := exec.LookPath("sh")
	cmd.Path, cmd.Args, cmd.Err = sh, args, nil
	return cmd
}

// OOMKills returns the OOM kills in the group so far.
func (g *Group) OOMKills() int64 {
	file, key := "memory.oom_control", "oom_kill"
	if g.V2 {
		file = "memory.events"
	}
	b, _ := os.ReadFile(filepath.Join(g.Dir, file))
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// Peak returns the most memory the group held (v2 memory.peak, Linux
// 5.19; v1 memory.max_usage_in_bytes); 0 when the kernel does not say.
func (g *Group) Peak() int64 {
	file := "memory.max_usage_in_bytes"
	if g.V2 {
		file = "memory.peak"
	}
	b, _ := os.ReadFile(filepath.Join(g.Dir, file))
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// Pids returns the processes in the group.
func (g *Group) Pids() []int {
	b, _ := os.ReadFile(filepath.Join(g.Dir, "cgroup.procs"))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// remove kills what is left in the group and removes it.
func (g *Group) remove() {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := g.Pids()
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for os.Remove(g.Dir) != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// BuildMemhog builds memhog into dir and returns its path, and the path
// of a link to it named cc in a directory of its own (so that launch's
// classification sees a C compiler).
func BuildMemhog(t testing.TB, dir string) (memhog, cc string) {
	t.Helper()
	memhog = filepath.Join(dir, "memhog")
	c := exec.Command("go", "build", "-o", memhog, "github.com/numasteal/numasteal/internal/memtest/memhog")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("building memhog: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "ccbin")
	os.MkdirAll(bin, 0o755)
	cc = filepath.Join(bin, "cc")
	if err := os.Symlink(memhog, cc); err != nil {
		t.Fatal(err)
	}
	return memhog, cc
}

// Project writes a make project of compiles into dir: one source per
// entry of mib, each needing that many MiB for about ms milliseconds,
// compiled by $(CC) into an object, and an "all" target over them.
// It returns the object names.
func Project(t testing.TB, dir string, mib []int, ms int) []string {
	t.Helper()
	var objs []string
	for i, m := range mib {
		src := fmt.Sprintf("f%03d.c", i)
		obj := fmt.Sprintf("f%03d.o", i)
		text := fmt.Sprintf("/* memhog mem=%d ms=%d */\nint f%d(void) { return %d; }\n", m, ms, i, i)
		if err := os.WriteFile(filepath.Join(dir, src), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, obj)
	}
	mk := "all: " + strings.Join(objs, " ") + "\n%.o: %.c\n\t$(CC) -c $< -o $@\nclean:\n\trm -f *.o\n"
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	return objs
}
