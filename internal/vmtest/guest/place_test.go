package guest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numasteal/numasteal/internal/vmtest"
	"github.com/numasteal/numasteal/launch"
	"github.com/numasteal/numasteal/launch/daemon"
	"github.com/numasteal/numasteal/memory"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// The hog's instructions, in its environment (the launcher passes its own
// on): how many MiB to allocate, and the directory of its "ready" file
// (its pid, written once every page is touched) and "release" file (the
// test's word to finish).
const (
	hogMiBEnv = "NUMASTEAL_GUEST_HOG_MIB"
	hogDirEnv = "NUMASTEAL_GUEST_HOG_DIR"
)

// hog is the compiler of TestPlaceByNodeMemory: "cc -c SRC -o OUT" that
// maps $NUMASTEAL_GUEST_HOG_MIB MiB of anonymous memory and touches every
// page, says so, holds the memory until released, then writes OUT.
func hog(args []string) int {
	out := ""
	for i, a := range args {
		if a == "-o" && i+1 < len(args) {
			out = args[i+1]
		}
	}
	mib, err := strconv.Atoi(os.Getenv(hogMiBEnv))
	dir := os.Getenv(hogDirEnv)
	if out == "" || err != nil || mib <= 0 || dir == "" {
		fmt.Fprintf(os.Stderr, "hog: want -o OUT, $%s and $%s (args %q)\n", hogMiBEnv, hogDirEnv, args)
		return 2
	}
	mem, err := syscall.Mmap(-1, 0, mib<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hog: mmap:", err)
		return 1
	}
	page := os.Getpagesize()
	for off := 0; off < len(mem); off += page {
		mem[off] = 1
	}
	ready := filepath.Join(dir, "ready")
	if err := os.WriteFile(ready+".tmp", []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "hog:", err)
		return 1
	}
	if err := os.Rename(ready+".tmp", ready); err != nil {
		fmt.Fprintln(os.Stderr, "hog:", err)
		return 1
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "release")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "hog: never released")
			return 1
		}
	}
	syscall.Munmap(mem)
	if err := os.WriteFile(out, []byte("hog\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "hog:", err)
		return 1
	}
	return 0
}

// TestPlaceByNodeMemory runs the daemon (in this process) and two compiles
// through the launcher (this binary again) on a machine whose two nodes
// with CPUs have unequal memory: a small one that fits the node the
// balancer chooses on an idle daemon, measured (the launcher forks it:
// its output is new), and one larger than the small node's free memory,
// measured too (its peak is known, but it does not fit twice over in
// what the VM has: the daemon keeps the launcher its parent, to run it
// again should the kernel kill it). Each compile's pages, in its /proc/PID/numa_maps,
// must be on the node of the CPU it was pinned to, under a policy that
// prefers that node; the large one's on the large node. On a layout whose
// nodes have equal memory there is nothing to check, and the test says so.
func TestPlaceByNodeMemory(t *testing.T) {
	l := layout(t)
	nodes, cpus := expect(t, l)
	var small, large *vmtest.Node
	for i := range nodes {
		n := &nodes[i]
		if n.CPUs.IsEmpty() || n.MemMB == 0 {
			continue
		}
		if small == nil || n.MemMB < small.MemMB {
			small = n
		}
		if large == nil || n.MemMB > large.MemMB {
			large = n
		}
	}
	if small == nil || small.MemMB == large.MemMB {
		t.Logf("layout %s: no two nodes with CPUs and unequal memory; placement by node memory is checked on unequal-memory-nodes", l.Name)
		return
	}
	const smallMiB, largeMiB = 16, 256
	smallMem, err := memory.ReadNode("/", small.ID)
	if err != nil {
		t.Fatal(err)
	}
	largeMem, err := memory.ReadNode("/", large.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The daemon adds a tenth to a learned peak: the large job's need is
	// 282 MiB.
	if smallMem.Free >= largeMiB<<20 || largeMem.Free < (largeMiB*11/10+32)<<20 {
		t.Fatalf("layout %s: nodes %d and %d have %d and %d MiB free: the check needs less than %d on the first and %d on the second",
			l.Name, small.ID, large.ID, smallMem.Free>>20, largeMem.Free>>20, largeMiB, largeMiB*11/10+32)
	}
	t.Logf("free memory: node %d %d MiB, node %d %d MiB", small.ID, smallMem.Free>>20, large.ID, largeMem.Free>>20)

	dir := t.TempDir()
	src := filepath.Join(dir, "src.c")
	smallOut, largeOut := filepath.Join(dir, "small.o"), filepath.Join(dir, "large.o")
	history := filepath.Join(dir, "peak-rss")
	// The daemon has learned both compiles' peaks.
	text := fmt.Sprintf("%d\t%s\n%d\t%s\n", smallMiB<<10, smallOut, largeMiB<<10, largeOut)
	cc := filepath.Join(dir, "bin", "cc")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string]string{
		src: "int f(void) { return 0; }\n", history: text,
		cc: fmt.Sprintf("#!/bin/sh\n%s=hog exec %s \"$@\"\n", childEnv, self),
	} {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_, sock := startDaemon(t, dir, daemon.Config{Mem: 1 << 30, History: history})
	nodeOf := func(cpu int) int { return cpus[cpu].Node }
	for _, job := range []struct {
		name    string
		mib     int
		out     string
		node    int // -1: the node of the CPU it was given
		measure bool
	}{{"small", smallMiB, smallOut, -1, true}, {"large", largeMiB, largeOut, large.ID, true}} {
		cpu, maps := runCompile(t, self, cc, src, job.out, sock, job.mib, job.measure)
		if cpu < 0 {
			return
		}
		want := job.node
		if want < 0 {
			want = nodeOf(cpu)
		}
		if nodeOf(cpu) != want {
			t.Errorf("%s compile (%d MiB): pinned to CPU %d on node %d, want a CPU of node %d", job.name, job.mib, cpu, nodeOf(cpu), want)
		}
		pages := maps.byNode[want]
		t.Logf("%s compile (%d MiB): CPU %d (node %d), policy %s, anonymous pages %d, on node %d %d (%.1f%%), by node %v",
			job.name, job.mib, cpu, nodeOf(cpu), maps.policy, maps.anon, want, pages, 100*float64(pages)/float64(max(maps.anon, 1)), maps.byNode)
		if maps.anon < int64(job.mib)<<20/int64(os.Getpagesize()) {
			t.Errorf("%s compile: %d anonymous pages, fewer than its %d MiB", job.name, maps.anon, job.mib)
		}
		if pages*10 < maps.anon*9 {
			t.Errorf("%s compile: %d of %d anonymous pages on node %d, want at least 90%%", job.name, pages, maps.anon, want)
		}
		if p := "prefer:" + strconv.Itoa(want); maps.policy != p {
			t.Errorf("%s compile: memory policy %q, want %q", job.name, maps.policy, p)
		}
	}
}

// runCompile runs "cc -c src -o out" through the launcher with the hog
// allocating mib MiB, forked and measured or handed off, and returns the CPU the hog was pinned to (-1
// after a failure) and its pages while it held them.
func runCompile(t *testing.T, self, cc, src, out, sock string, mib int, measure bool) (int, numaMaps) {
	t.Helper()
	hogDir := t.TempDir()
	cmd := exec.Command(self, cc, "-c", src, "-o", out)
	cmd.Env = append(os.Environ(), childEnv+"=launch", "NUMASTEAL_SOCKET="+sock,
		hogMiBEnv+"="+strconv.Itoa(mib), hogDirEnv+"="+hogDir)
	if measure {
		cmd.Env = append(cmd.Env, launch.MeasureEnv+"=1")
	}
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	release := func() { os.WriteFile(filepath.Join(hogDir, "release"), nil, 0o644) }
	defer func() {
		release()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("launcher of %s: %v\n%s", filepath.Base(out), err, output.String())
			}
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-exited
			t.Errorf("launcher of %s did not end within a minute of its release\n%s", filepath.Base(out), output.String())
		}
	}()
	var pid int
	for deadline := time.Now().Add(2 * time.Minute); pid == 0; {
		if b, err := os.ReadFile(filepath.Join(hogDir, "ready")); err == nil {
			pid, _ = strconv.Atoi(string(b))
			break
		}
		select {
		case err := <-exited:
			exited <- err
			t.Errorf("launcher of %s ended before its compile allocated: %v\n%s", filepath.Base(out), err, output.String())
			return -1, numaMaps{}
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Errorf("compile %s did not allocate within 2 minutes\n%s", filepath.Base(out), output.String())
			return -1, numaMaps{}
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Handed off, the launcher became the compile; measured, it forked it.
	ppid, _ := strconv.Atoi(statusValue(status, "PPid:"))
	if handedOff := pid == cmd.Process.Pid; handedOff == measure || (measure && ppid != cmd.Process.Pid) {
		t.Errorf("compile %s (measured %v): pid %d, parent %d; the launcher is %d", filepath.Base(out), measure, pid, ppid, cmd.Process.Pid)
	}
	allowed, err := cpuset.Parse(statusValue(status, "Cpus_allowed_list:"))
	if err != nil || allowed.Len() != 1 {
		t.Errorf("compile %s: Cpus_allowed_list %s (%v), want one CPU\n%s", filepath.Base(out), allowed, err, output.String())
		return -1, numaMaps{}
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/numa_maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	maps, err := parseNumaMaps(b)
	if err != nil {
		t.Fatal(err)
	}
	return allowed.First(), maps
}

// statusValue returns the value of key ("PPid:") in /proc/PID/status.
func statusValue(status []byte, key string) string {
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, key); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// numaMaps is what /proc/PID/numa_maps says of a process's anonymous
// mappings: their pages, by node, and the policy of the largest.
type numaMaps struct {
	anon   int64
	byNode map[int]int64
	policy string
}

// parseNumaMaps reads the lines of anonymous mappings (anon=, no file=):
//
//	7f1c2a000000 prefer:1 anon=65536 dirty=65536 active=0 N1=65536 kernelpagesize_kB=4
func parseNumaMaps(b []byte) (numaMaps, error) {
	m := numaMaps{byNode: map[int]int64{}}
	var largest int64
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 2 || strings.Contains(line, " file=") || !strings.Contains(line, " anon=") {
			continue
		}
		var anon int64
		for _, kv := range f[2:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if k == "anon" {
				if err != nil {
					return numaMaps{}, fmt.Errorf("numa_maps line %q: %v", line, err)
				}
				anon = n
			} else if node, err2 := strconv.Atoi(strings.TrimPrefix(k, "N")); strings.HasPrefix(k, "N") && err2 == nil && err == nil {
				m.byNode[node] += n
			}
		}
		m.anon += anon
		if anon > largest {
			largest, m.policy = anon, f[1]
		}
	}
	return m, nil
}

// startDaemon runs a daemon in this process on a socket in dir, with cfg
// (its paths, idle time and log set here), until the test ends, and
// returns the socket; its log is shown when the test failed.
func startDaemon(t *testing.T, dir string, cfg daemon.Config) (*daemon.Server, string) {
	t.Helper()
	sock := filepath.Join(dir, "daemon", "sock")
	var log bytes.Buffer
	cfg.Paths = launch.PathsFromEnv(func(k string) string {
		if k == "NUMASTEAL_SOCKET" {
			return sock
		}
		return ""
	})
	cfg.Idle, cfg.Log = -1, &log
	srv, err := daemon.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("daemon: %v", err)
		}
		if t.Failed() {
			t.Logf("daemon log:\n%s", log.String())
		}
	})
	return srv, sock
}
