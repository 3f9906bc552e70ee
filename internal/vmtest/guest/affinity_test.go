package guest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// TestPinEveryCPU pins the thread to each CPU in turn and checks with getcpu
// that it runs there, on the CPU's node; then to each node's CPUs.
func TestPinEveryCPU(t *testing.T) {
	l := layout(t)
	nodes, cpus := expect(t, l)
	allowed, err := affinity.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if want := cpuset.Range(0, l.NumCPU()-1); !allowed.Equal(want) {
		t.Fatalf("Allowed() = %s, want %s", allowed, want)
	}
	for _, c := range cpus {
		unlock, err := affinity.LockAndPin(cpuset.Of(c.ID))
		if err != nil {
			t.Fatal(err)
		}
		cpu, node, err := affinity.CurrentCPU()
		unlock()
		if err != nil || cpu != c.ID || node != c.Node {
			t.Errorf("pinned to CPU %d (node %d): getcpu says CPU %d node %d (err %v)", c.ID, c.Node, cpu, node, err)
		}
	}
	for _, n := range nodes {
		if n.CPUs.IsEmpty() {
			continue
		}
		unlock, err := affinity.LockAndPin(n.CPUs)
		if err != nil {
			t.Fatal(err)
		}
		runtime.Gosched()
		cpu, node, err := affinity.CurrentCPU()
		unlock()
		if err != nil || !n.CPUs.Contains(cpu) || node != n.ID {
			t.Errorf("pinned to node %d's CPUs %s: getcpu says CPU %d node %d (err %v)", n.ID, n.CPUs, cpu, node, err)
		}
	}
	t.Logf("pinned to each of CPUs %s and to each node's CPUs", allowed)
}

// TestStartPinned starts a shell on each node's CPUs, which reports its own
// mask and its child's and grandchild's; and the test binary itself pinned
// to the last CPU, which reports where getcpu finds it.
func TestStartPinned(t *testing.T) {
	l := layout(t)
	nodes, _ := expect(t, l)
	const script = `grep Cpus_allowed_list /proc/self/status
sh -c 'grep Cpus_allowed_list /proc/self/status; sh -c "grep Cpus_allowed_list /proc/self/status"'`
	for _, n := range nodes {
		if n.CPUs.IsEmpty() {
			continue
		}
		cmd := exec.Command("sh", "-c", script)
		out := run(t, cmd, n.CPUs)
		lines := strings.Split(out, "\n")
		if len(lines) != 3 {
			t.Errorf("node %d: want 3 lines, got %q", n.ID, out)
			continue
		}
		for i, line := range lines {
			if got := strings.TrimSpace(strings.TrimPrefix(line, "Cpus_allowed_list:")); got != n.CPUs.String() {
				t.Errorf("node %d, generation %d: Cpus_allowed_list %s, want %s", n.ID, i+1, got, n.CPUs)
			}
		}
	}
	last := l.NumCPU() - 1
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=report")
	if got, want := run(t, cmd, cpuset.Of(last)), fmt.Sprintf("cpu=%d allowed=%d", last, last); got != want {
		t.Errorf("Go child pinned to CPU %d reports %q, want %q", last, got, want)
	}
}

// run starts cmd with StartPinned and returns its trimmed output.
func run(t *testing.T, cmd *exec.Cmd, set cpuset.Set) string {
	t.Helper()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := affinity.StartPinned(cmd, set); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %v: %s", cmd.Args, err, out.String())
	}
	return strings.TrimSpace(out.String())
}

// TestMemPolicy sets Local, Bind to each node with memory, and Interleave
// over all of them, and checks with get_mempolicy where freshly touched
// pages land. Bind to a memory-less node must fail with EINVAL naming it;
// Interleave over a memory-less node and one with memory is accepted and
// puts every page on the latter.
func TestMemPolicy(t *testing.T) {
	l := layout(t)
	nodes, _ := expect(t, l)
	var withMem, noMem cpuset.Set
	for _, n := range nodes {
		if n.MemMB > 0 {
			withMem.Add(n.ID)
		} else {
			noMem.Add(n.ID)
		}
	}
	t.Run("local", func(t *testing.T) {
		runtime.LockOSThread() // never unlocked: the thread ends with the test
		if err := affinity.SetMemPolicy(affinity.Local, cpuset.Set{}); err != nil {
			t.Fatal(err)
		}
		checkPolicy(t, affinity.MemPolicy{Mode: affinity.Local})
	})
	for n := range withMem.All() {
		t.Run(fmt.Sprintf("bind-%d", n), func(t *testing.T) {
			runtime.LockOSThread()
			if err := affinity.SetMemPolicy(affinity.Bind, cpuset.Of(n)); err != nil {
				t.Fatal(err)
			}
			checkPolicy(t, affinity.MemPolicy{Mode: affinity.Bind, Nodes: cpuset.Of(n)})
			if got := touchPages(t, 4); !got.Equal(cpuset.Of(n)) {
				t.Errorf("pages under bind:%d landed on nodes %s", n, got)
			}
		})
	}
	t.Run("interleave", func(t *testing.T) {
		runtime.LockOSThread()
		if err := affinity.SetMemPolicy(affinity.Interleave, withMem); err != nil {
			t.Fatal(err)
		}
		checkPolicy(t, affinity.MemPolicy{Mode: affinity.Interleave, Nodes: withMem})
		if got := touchPages(t, 4*withMem.Len()); !got.Equal(withMem) {
			t.Errorf("pages under interleave:%s landed on nodes %s", withMem, got)
		}
	})
	for n := range noMem.All() {
		t.Run(fmt.Sprintf("bind-memoryless-%d", n), func(t *testing.T) {
			runtime.LockOSThread()
			err := affinity.SetMemPolicy(affinity.Bind, cpuset.Of(n))
			want := fmt.Sprintf("affinity: set_mempolicy bind to nodes %d: invalid argument", n)
			var e *affinity.Error
			if !errors.As(err, &e) || !errors.Is(err, unix.EINVAL) || err.Error() != want {
				t.Fatalf("Bind to memory-less node %d: %v; want %q", n, err, want)
			}
			checkPolicy(t, affinity.MemPolicy{Mode: affinity.Default})
		})
		t.Run(fmt.Sprintf("interleave-with-memoryless-%d", n), func(t *testing.T) {
			runtime.LockOSThread()
			mixed := withMem.Union(cpuset.Of(n))
			if err := affinity.SetMemPolicy(affinity.Interleave, mixed); err != nil {
				t.Fatal(err)
			}
			if got := touchPages(t, 4*mixed.Len()); !got.Equal(withMem) {
				t.Errorf("pages under interleave:%s landed on nodes %s, want %s", mixed, got, withMem)
			}
		})
	}
}

// checkPolicy compares GetMemPolicy with want.
func checkPolicy(t *testing.T, want affinity.MemPolicy) {
	t.Helper()
	got, err := affinity.GetMemPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if got.Mode != want.Mode || !got.Nodes.Equal(want.Nodes) {
		t.Errorf("GetMemPolicy() = %v, want %v", got, want)
	}
}

// touchPages maps n fresh pages, touches each from the calling thread and
// returns the nodes they landed on.
func touchPages(t *testing.T, n int) cpuset.Set {
	t.Helper()
	page := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, n*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	var nodes cpuset.Set
	for off := 0; off < len(mem); off += page {
		mem[off] = 1
		node, err := affinity.PageNode(mem[off:])
		if err != nil {
			t.Fatal(err)
		}
		nodes.Add(node)
	}
	return nodes
}
