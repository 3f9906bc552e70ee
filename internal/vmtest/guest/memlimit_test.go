package guest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/numasteal/numasteal/internal/membuild"
	"github.com/numasteal/numasteal/internal/vmtest"
	"github.com/numasteal/numasteal/launch/daemon"
	"github.com/numasteal/numasteal/memory"
)

// alloc is the compiler of TestMemoryLimitV2, as internal/memtest's
// memhog: "cc -c SRC -o OUT" where SRC holds "memhog mem=MiB ms=MS". It
// makes itself the OOM killer's first choice, maps MiB of anonymous
// memory and touches it over the first half of MS, holds it for the
// rest, then writes OUT.
func alloc(args []string) int {
	var src, out string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-o" && i+1 < len(args):
			out = args[i+1]
			i++
		case !strings.HasPrefix(a, "-"):
			src = a
		}
	}
	text, err := os.ReadFile(src)
	mib, ms := 0, 0
	if i := bytes.Index(text, []byte("memhog ")); i >= 0 {
		fmt.Sscanf(string(text[i:]), "memhog mem=%d ms=%d", &mib, &ms)
	}
	if out == "" || err != nil || mib <= 0 {
		fmt.Fprintf(os.Stderr, "alloc: want SRC with \"memhog mem=MiB ms=MS\" and -o OUT (args %q): %v\n", args, err)
		return 2
	}
	os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0o644)
	mem, err := syscall.Mmap(-1, 0, mib<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		fmt.Fprintln(os.Stderr, "alloc: mmap:", err)
		return 1
	}
	start, page, steps := time.Now(), os.Getpagesize(), 20
	ramp := time.Duration(ms) * time.Millisecond / 2
	for s := 1; s <= steps; s++ {
		for off := (s - 1) * len(mem) / steps / page * page; off < s*len(mem)/steps; off += page {
			mem[off] = 1
		}
		time.Sleep(time.Until(start.Add(ramp * time.Duration(s) / time.Duration(steps))))
	}
	time.Sleep(time.Until(start.Add(2 * ramp)))
	syscall.Munmap(mem)
	if err := os.WriteFile(out, text, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "alloc:", err)
		return 1
	}
	return 0
}

// TestMemoryLimitV2 builds in a memory-limited cgroup v2 group, for real:
// it mounts cgroup2 where the guest has not, makes a group with
// memory.max set to the layout's MemLimitMiB and a leaf below it, and
// moves this process (the daemon's, and the parent of every launcher and
// compile) into the leaf. There, memory.Open sees the group's limit
// through the leaf's ancestor; compiles that each need more than half
// the limit, started all at once through the launcher and the daemon (in
// this process), first with no peak learned and then with every peak
// learned, all succeed and the group's memory.events counts no OOM kill;
// with a first guess far too low, every compile still succeeds, each OOM
// kill run again; two of them at once without the daemon are OOM-killed
// (the limit bites).
func TestMemoryLimitV2(t *testing.T) {
	l, ok := limitedLayout(t)
	if !ok {
		return
	}
	limit := int64(l.MemLimitMiB) << 20
	leaf := limitedLeaf(t, limit)
	group := &membuild.Group{Dir: filepath.Dir(leaf), V2: true, Limit: limit}

	src, err := memory.Open("/", 0)
	if err != nil {
		t.Fatal(err)
	}
	if gs := src.Groups(); len(gs) < 2 || gs[0].Dir != leaf || !gs[0].V2 || gs[1].Dir != group.Dir {
		t.Errorf("memory.Open sees the groups %v, want %s (v2) and its parent first", gs, leaf)
	}
	s, err := src.Sample()
	if err != nil {
		t.Fatal(err)
	}
	wantFile := filepath.Join(group.Dir, "memory.max")
	t.Logf("memory.Sample in %s: limit %d MiB (%s), available %d MiB, MemAvailable %d MiB, pressure %v",
		leaf, s.Limit>>20, s.LimitFile, s.Available>>20, s.MemAvailable>>20, s.HasPressure)
	if s.Limit != limit || s.LimitFile != wantFile {
		t.Errorf("memory.Sample: Limit %d in %q, want %d in %q", s.Limit, s.LimitFile, limit, wantFile)
	}
	if s.Available <= 0 || s.Available > limit {
		t.Errorf("memory.Sample: Available %d, want within (0, %d]", s.Available, limit)
	}

	// Each compile needs five eighths of the limit: one fits with the
	// launchers and this process, two do not.
	const compiles = 3
	mib, ms := l.MemLimitMiB*5/8, 1000
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cc := filepath.Join(dir, "bin", "cc")
	os.MkdirAll(filepath.Dir(cc), 0o755)
	if err := os.WriteFile(cc, fmt.Appendf(nil, "#!/bin/sh\n%s=alloc exec %s \"$@\"\n", childEnv, self), 0o755); err != nil {
		t.Fatal(err)
	}
	var srcs []string
	for i := range compiles {
		p := filepath.Join(dir, fmt.Sprintf("f%d.c", i))
		srcs = append(srcs, p)
		if err := os.WriteFile(p, fmt.Appendf(nil, "/* memhog mem=%d ms=%d */\n", mib, ms), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// build compiles every source at once through the launcher and the
	// daemon of sock, checks that each succeeded and wrote its object,
	// and returns the OOM kills in the group meanwhile.
	build := func(name string, srv *daemon.Server, sock string) int64 {
		before := group.OOMKills()
		start := time.Now()
		errs := compileAll(t, srcs, func(src string) *exec.Cmd {
			c := exec.Command(self, cc, "-c", src, "-o", src+".o")
			c.Env = append(os.Environ(), childEnv+"=launch", "NUMASTEAL_SOCKET="+sock)
			return c
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("%s: compile of %s through the launcher: %v", name, filepath.Base(srcs[i]), err)
			} else if _, err := os.Stat(srcs[i] + ".o"); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			os.Remove(srcs[i] + ".o")
		}
		st := srv.Status()
		oom := group.OOMKills() - before
		t.Logf("%s: %d compiles of %d MiB at once through the launcher in %.1fs: %d OOM kills in the group, peak %d MiB; daemon: %d freezes, %d OOM retries, %d learned",
			name, compiles, mib, time.Since(start).Seconds(), oom, group.Peak()>>20, st.Memory.Freezes, st.Memory.OOMRetries, st.Learned)
		return oom
	}

	// The daemon's defaults, twice: first with nothing learned (the first
	// guess of a compile, 256 MiB, is more than the room beside a running
	// one), then with every compile's peak learned.
	srv, sock := startDaemon(t, t.TempDir(), daemon.Config{History: filepath.Join(dir, "peak-rss")})
	if m := srv.Status().Memory; m.Limit != limit>>10 || m.LimitFile != wantFile {
		t.Errorf("daemon status: limit %d KiB in %q, want %d KiB in %q", m.Limit, m.LimitFile, limit>>10, wantFile)
	}
	for _, name := range []string{"first build", "second build"} {
		if oom := build(name, srv, sock); oom != 0 {
			t.Errorf("%s: %d OOM kills in %s through the daemon, want 0", name, oom, group.Dir)
		}
	}

	// A first guess far too low: the daemon admits every compile at once,
	// and when freezing the newest cannot keep them within the limit
	// (without swap a frozen job gives nothing back), it tells the
	// kernel's OOM kills from the group's memory.events and runs those
	// compiles again: the build still succeeds.
	srv, sock = startDaemon(t, t.TempDir(), daemon.Config{History: filepath.Join(dir, "peak-rss-low"), GuessCompile: 16 << 20})
	oom := build("first build, guess 16 MiB", srv, sock)
	if retries := srv.Status().Memory.OOMRetries; retries != oom {
		t.Errorf("first build, guess 16 MiB: %d OOM kills in the group, %d OOM retries by the daemon; want every kill seen and retried", oom, retries)
	}

	// Two at once, without the daemon: the kernel kills.
	before := group.OOMKills()
	errs := compileAll(t, srcs[:2], func(src string) *exec.Cmd {
		return exec.Command(cc, "-c", src, "-o", src+".direct.o")
	})
	killed := 0
	for _, err := range errs {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL {
			killed++
		}
	}
	t.Logf("2 compiles of %d MiB at once under memory.max %d MiB, without the daemon: %d SIGKILLed, %d OOM kills in the group (results %v)",
		mib, l.MemLimitMiB, killed, group.OOMKills()-before, errs)
	if killed == 0 || group.OOMKills() == before {
		t.Errorf("2 compiles of %d MiB at once under a %d MiB limit: %d killed, OOM kills %d -> %d; want the kernel to kill one",
			mib, l.MemLimitMiB, killed, before, group.OOMKills())
	}
}

// compileAll starts one command per source at once, waits for all, and
// returns their errors (with their output), in order.
func compileAll(t *testing.T, srcs []string, command func(src string) *exec.Cmd) []error {
	t.Helper()
	errs := make([]error, len(srcs))
	var wg sync.WaitGroup
	for i, src := range srcs {
		c := command(src)
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		c.WaitDelay = time.Second
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			done := make(chan error, 1)
			go func() { done <- c.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					err = fmt.Errorf("%w: %s", err, strings.TrimSpace(out.String()))
				}
				errs[i] = err
			case <-time.After(2 * time.Minute):
				c.Process.Kill()
				errs[i] = fmt.Errorf("did not end within 2 minutes: %s", <-done)
			}
		})
	}
	wg.Wait()
	return errs
}

// limitedLayout returns the VM's layout and whether it sets a memory
// limit, which the cgroup v2 memory checks need; without one it logs
// that they run on another layout.
func limitedLayout(t *testing.T) (vmtest.Layout, bool) {
	t.Helper()
	l := layout(t)
	if l.MemLimitMiB == 0 {
		t.Logf("layout %s sets no memory limit; the cgroup v2 memory checks run on cgroup2-memory-limit", l.Name)
	}
	return l, l.MemLimitMiB != 0
}

// limitedLeaf makes a cgroup v2 group limited to limit bytes (no swap)
// and a leaf below it, moves this process into the leaf, and returns the
// leaf's directory; when the test ends, the process goes back to the
// root cgroup and both groups are removed. It mounts cgroup2 on
// /sys/fs/cgroup when the guest has no cgroup2 mount.
func limitedLeaf(t *testing.T, limit int64) string {
	t.Helper()
	root := cgroup2Mount(t)
	if c, _ := os.ReadFile("/proc/self/cgroup"); !bytes.Equal(bytes.TrimSpace(c), []byte("0::/")) {
		t.Fatalf("the guest check runs in the root cgroup of a pure cgroup v2 machine; /proc/self/cgroup:\n%s", c)
	}
	write := func(file, text string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The root cgroup may hold processes and still give controllers to
	// its children; any other group gives them only while it has none.
	write(filepath.Join(root, "cgroup.subtree_control"), "+memory")
	g, err := membuild.NewGroup(limit, "numasteal-memlimit")
	if err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(g.Dir, "cgroup.subtree_control"), "+memory")
	leaf := filepath.Join(g.Dir, "daemon")
	if err := os.Mkdir(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	// This process stays: the kernel kills compiles, never the test.
	write("/proc/self/oom_score_adj", "-1000")
	write(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(os.Getpid()))
	t.Cleanup(func() {
		write(filepath.Join(root, "cgroup.procs"), strconv.Itoa(os.Getpid()))
		write("/proc/self/oom_score_adj", "0")
		if err := (&membuild.Group{Dir: leaf, V2: true}).Remove(); err != nil {
			t.Error(err)
		}
		if err := g.Remove(); err != nil {
			t.Error(err)
		}
	})
	return leaf
}

// cgroup2Mount returns where cgroup2 is mounted, mounting it on
// /sys/fs/cgroup when it is not.
func cgroup2Mount(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if fields := strings.Fields(sc.Text()); len(fields) > 2 && fields[2] == "cgroup2" {
			return fields[1]
		}
	}
	const dir = "/sys/fs/cgroup"
	if err := syscall.Mount("cgroup2", dir, "cgroup2", 0, ""); err != nil {
		t.Fatalf("mounting cgroup2 on %s: %v", dir, err)
	}
	t.Logf("mounted cgroup2 on %s", dir)
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting cgroup2 from %s: %v", dir, err)
		}
	})
	return dir
}
