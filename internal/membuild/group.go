package membuild

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/numasteal/numasteal/topology"
)

// Group is a memory-limited cgroup.
type Group struct {
	// Dir is the cgroup's directory; V2 says in which hierarchy.
	Dir string
	V2  bool
	// Limit is its memory limit in bytes.
	Limit int64
}

// NewGroup makes a cgroup named name limited to limit bytes (swap
// included: a compile that does not fit is OOM-killed, not swapped out),
// below the calling process's own memory cgroup. Where none can be made
// (not root and no delegated subtree, or no memory controller) the error
// says why. The caller removes the group with Remove.
func NewGroup(limit int64, name string) (*Group, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("membuild: memory limit %d: want a positive number of bytes", limit)
	}
	if name == "" || strings.ContainsAny(name, "/\x00") {
		return nil, fmt.Errorf("membuild: cgroup name %q: want one path element", name)
	}
	groups, err := topology.MemoryCgroups("/", 0)
	if err != nil {
		return nil, fmt.Errorf("membuild: %w", err)
	}
	if len(groups) == 0 {
		return nil, errors.New("membuild: no memory controller in any cgroup hierarchy of this process")
	}
	own := groups[0]
	g := &Group{V2: own.V2, Limit: limit}
	parent := own.Dir
	if own.V2 {
		// v2's rule of no internal processes: a group with processes
		// cannot give controllers to children. Make a sibling-free leaf
		// below a group of our own where the memory controller is on.
		if err := enable(parent); err != nil {
			return nil, fmt.Errorf("membuild: enabling the memory controller in %s: %w", parent, err)
		}
	}
	g.Dir = filepath.Join(parent, name)
	if err := os.Mkdir(g.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("membuild: %w", err)
	}
	file := "memory.limit_in_bytes"
	if g.V2 {
		file = "memory.max"
	}
	if err := os.WriteFile(filepath.Join(g.Dir, file), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		os.Remove(g.Dir)
		return nil, fmt.Errorf("membuild: %w", err)
	}
	// Best effort: a kernel without swap accounting has neither file,
	// and a machine without swap needs neither.
	if g.V2 {
		os.WriteFile(filepath.Join(g.Dir, "memory.swap.max"), []byte("0"), 0o644)
	} else {
		os.WriteFile(filepath.Join(g.Dir, "memory.memsw.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0o644)
		os.WriteFile(filepath.Join(g.Dir, "memory.swappiness"), []byte("0"), 0o644)
	}
	return g, nil
}

// HasController reports whether this process is in a memory cgroup
// hierarchy, whether or not it may make groups there.
func HasController() bool {
	b, _ := os.ReadFile("/proc/self/cgroup")
	if bytes.Contains(b, []byte(":memory:")) {
		return true
	}
	c, _ := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	return slices.Contains(strings.Fields(string(c)), "memory")
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

// OOMKills returns the OOM kills in the group and in the cgroups below
// it that exist now (v2 counts those in the group's memory.events; v1
// counts a kill in the victim's cgroup alone, so the count of a cgroup
// removed since is lost).
func (g *Group) OOMKills() int64 {
	if g.V2 {
		return oomKills(filepath.Join(g.Dir, "memory.events"))
	}
	var n int64
	filepath.WalkDir(g.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			n += oomKills(filepath.Join(p, "memory.oom_control"))
		}
		return nil
	})
	return n
}

// oomKills reads the oom_kill count of a memory.events or
// memory.oom_control file; 0 when it has none.
func oomKills(file string) int64 {
	b, _ := os.ReadFile(file)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "oom_kill" {
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

// Pids returns the processes in the group and in the cgroups below it
// (a numasteal run inside the group makes its tasks' own).
func (g *Group) Pids() []int {
	var out []int
	for _, dir := range g.dirs() {
		b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// dirs returns the group's directory and those of the cgroups below it,
// each before the cgroups below it.
func (g *Group) dirs() []string {
	var out []string
	filepath.WalkDir(g.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// Kill SIGKILLs the processes in the group and below it until none is
// left, for up to ten seconds.
func (g *Group) Kill() error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := g.Pids()
		if len(pids) == 0 {
			return nil
		}
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("membuild: processes %v are still in %s after SIGKILL", pids, g.Dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Remove kills what is left in the group and below it, and removes it
// with the cgroups below it (one that a program killed inside it left).
func (g *Group) Remove() error {
	kerr := g.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for {
		dirs := g.dirs()
		var err error
		for _, dir := range slices.Backward(dirs) {
			if rerr := os.Remove(dir); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = rerr
				break
			}
		}
		if err == nil {
			return kerr
		}
		if time.Now().After(deadline) {
			return errors.Join(kerr, fmt.Errorf("membuild: %w", err))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
