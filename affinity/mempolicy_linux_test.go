package affinity

import (
	"errors"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// lockForPolicy locks the test goroutine to its thread for a memory policy
// test and never unlocks: the runtime ends the thread when the test's
// goroutine exits, so the policy cannot leak to other goroutines. It skips
// the test when the system refuses memory policies altogether: a kernel
// without CONFIG_NUMA (ENOSYS), or a container whose seccomp profile allows
// set_mempolicy only with CAP_SYS_NICE (EPERM; Docker's default).
func lockForPolicy(t *testing.T) {
	t.Helper()
	runtime.LockOSThread()
	err := SetMemPolicy(Default, cpuset.Set{})
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
		t.Skipf("SKIP: this system refuses memory policies: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// memNode returns the first node with memory (node/has_memory), which is
// node 0 on almost every machine.
func memNode(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/sys/devices/system/node/has_memory")
	if err != nil {
		return 0 // no node directory: a machine with one node, 0
	}
	s, err := cpuset.Parse(string(b))
	if err != nil || s.IsEmpty() {
		t.Fatalf("/sys/devices/system/node/has_memory: %q: %v", b, err)
	}
	return s.First()
}

func TestSetMemPolicyRoundTrip(t *testing.T) {
	n := cpuset.Of(memNode(t))
	tests := []struct {
		mode  Mode
		nodes cpuset.Set
		want  MemPolicy
	}{
		{Local, cpuset.Set{}, MemPolicy{Mode: Local}},
		{Bind, n, MemPolicy{Mode: Bind, Nodes: n}},
		{Interleave, n, MemPolicy{Mode: Interleave, Nodes: n}},
		{Preferred, n, MemPolicy{Mode: Preferred, Nodes: n}},
		// An empty preferred set means local allocation (set_mempolicy(2)).
		{Preferred, cpuset.Set{}, MemPolicy{Mode: Local}},
		{Default, cpuset.Set{}, MemPolicy{Mode: Default}},
	}
	for _, tt := range tests {
		t.Run(MemPolicy{Mode: tt.mode, Nodes: tt.nodes}.String(), func(t *testing.T) {
			lockForPolicy(t)
			if err := SetMemPolicy(tt.mode, tt.nodes); err != nil {
				t.Fatal(err)
			}
			got, err := GetMemPolicy()
			if err != nil {
				t.Fatal(err)
			}
			if got.Mode != tt.want.Mode || !got.Nodes.Equal(tt.want.Nodes) {
				t.Errorf("GetMemPolicy() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSetMemPolicyRefused(t *testing.T) {
	tests := []struct {
		mode    Mode
		nodes   cpuset.Set
		wantErr error
		wantMsg string
	}{
		{Bind, cpuset.Set{}, ErrEmptySet, "affinity: set_mempolicy bind to no nodes: empty set"},
		{Interleave, cpuset.Set{}, ErrEmptySet, "affinity: set_mempolicy interleave to no nodes: empty set"},
		{Bind, cpuset.Of(1000), unix.EINVAL, "affinity: set_mempolicy bind to nodes 1000: invalid argument"},
		{Local, cpuset.Of(0), unix.EINVAL, "affinity: set_mempolicy local to nodes 0: invalid argument"},
		{Default, cpuset.Of(0), unix.EINVAL, "affinity: set_mempolicy default to nodes 0: invalid argument"},
		{Mode(99), cpuset.Set{}, unix.EINVAL, "affinity: set_mempolicy mode(99): invalid argument"},
	}
	for _, tt := range tests {
		t.Run(MemPolicy{Mode: tt.mode, Nodes: tt.nodes}.String(), func(t *testing.T) {
			lockForPolicy(t)
			err := SetMemPolicy(tt.mode, tt.nodes)
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, tt.wantErr) {
				t.Fatalf("SetMemPolicy(%v, %s) = %v, want *Error wrapping %v", tt.mode, tt.nodes, err, tt.wantErr)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("message %q, want %q", err, tt.wantMsg)
			}
			if got, err := GetMemPolicy(); err != nil || got.Mode != Default {
				t.Errorf("after a refused SetMemPolicy: GetMemPolicy() = %v, %v; want default", got, err)
			}
		})
	}
}

// TestPageNodeUnderBind touches fresh pages under Bind to a node and asks
// the kernel where they are.
func TestPageNodeUnderBind(t *testing.T) {
	lockForPolicy(t)
	want := memNode(t)
	if err := SetMemPolicy(Bind, cpuset.Of(want)); err != nil {
		t.Fatal(err)
	}
	page := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 4*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	for off := 0; off < len(mem); off += page {
		mem[off] = 1
		node, err := PageNode(mem[off:])
		if err != nil {
			t.Fatal(err)
		}
		if node != want {
			t.Errorf("page %d is on node %d under bind:%d", off/page, node, want)
		}
	}
	if _, err := PageNode(nil); !errors.Is(err, ErrEmptySet) {
		t.Errorf("PageNode(nil) = %v, want ErrEmptySet", err)
	}
}
