package affinity

import (
	"errors"
	"math/bits"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// Flags get_mempolicy may OR into the mode it returns (linux/mempolicy.h);
// GetMemPolicy strips them.
const (
	mpolFStaticNodes   = 1 << 15
	mpolFRelativeNodes = 1 << 14
	mpolFNumaBalancing = 1 << 13
	mpolModeFlags      = mpolFStaticNodes | mpolFRelativeNodes | mpolFNumaBalancing

	// get_mempolicy flags: return the node of the page at addr.
	mpolFNode = 1 << 0
	mpolFAddr = 1 << 1
)

// maxNodeBits bounds the node masks given to the kernel: it refuses a maxnode
// above PAGE_SIZE*8 (mm/mempolicy.c get_nodes), and MAX_NUMNODES is 1024 on
// common configurations.
const maxNodeBits = 4096 * 8

// SetMemPolicy sets the NUMA memory policy of the calling OS thread
// (set_mempolicy): where the kernel takes the pages this thread touches
// first from now on. Pages already present stay where they are.
//
// Like PinThread it acts on the thread, not the goroutine: call
// runtime.LockOSThread first, and set Default again (or never unlock) before
// the thread goes back to the Go scheduler. Threads and child processes
// created from this thread inherit the policy.
//
// Default and Local take no nodes; Bind, Interleave, PreferredMany and
// WeightedInterleave need at least one (an empty set is refused with
// ErrEmptySet before the system call); Preferred uses the lowest node given,
// or means Local when nodes is empty. The kernel refuses with EINVAL a set
// in which no node has memory, such as Bind to a memory-less node.
func SetMemPolicy(mode Mode, nodes cpuset.Set) error {
	op := "set_mempolicy " + mode.String()
	if nodes.IsEmpty() {
		if mode.needsNodes() {
			return &Error{Op: op, Unit: "nodes", Err: ErrEmptySet}
		}
		_, _, e := unix.Syscall(unix.SYS_SET_MEMPOLICY, uintptr(mode), 0, 0)
		if e != 0 {
			return &Error{Op: op, Err: e}
		}
		return nil
	}
	m := kernelMask(nodes)
	// The kernel reads maxnode-1 bits (get_nodes starts with --maxnode, an
	// off-by-one kept for compatibility), so maxnode is the mask's bit
	// count plus one, as libnuma passes it.
	maxnode := uintptr(len(m)*bits.UintSize + 1)
	_, _, e := unix.Syscall(unix.SYS_SET_MEMPOLICY, uintptr(mode), uintptr(unsafe.Pointer(&m[0])), maxnode)
	runtime.KeepAlive(m)
	if e != 0 {
		return &Error{Op: op, Unit: "nodes", Set: nodes.String(), Err: e}
	}
	return nil
}

// GetMemPolicy returns the calling OS thread's memory policy
// (get_mempolicy). The mode flags MPOL_F_STATIC_NODES and
// MPOL_F_RELATIVE_NODES, which SetMemPolicy never sets, are dropped.
func GetMemPolicy() (MemPolicy, error) {
	// The kernel refuses (EINVAL) a maxnode below its nr_node_ids, so
	// start at 1024 nodes and grow.
	for nbits := 1024; ; nbits *= 2 {
		m := make([]uint, nbits/bits.UintSize)
		var mode int32
		_, _, e := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&mode)),
			uintptr(unsafe.Pointer(&m[0])), uintptr(nbits+1), 0, 0, 0)
		runtime.KeepAlive(m)
		switch {
		case e == 0:
			return MemPolicy{Mode: Mode(mode &^ mpolModeFlags), Nodes: setFromMask(m)}, nil
		case errors.Is(e, unix.EINVAL) && nbits < maxNodeBits:
			continue
		default:
			return MemPolicy{}, &Error{Op: "get_mempolicy", Err: e}
		}
	}
}

// PageNode returns the NUMA node that holds the memory page of b[0]
// (get_mempolicy with MPOL_F_NODE|MPOL_F_ADDR). The kernel faults the page
// in first if it is not present yet, under the policy in force for it, so
// touch the memory from the intended thread first when that matters. It is
// meant for tests and diagnostics. An empty b is refused with ErrEmptySet.
func PageNode(b []byte) (int, error) {
	if len(b) == 0 {
		return -1, &Error{Op: "get_mempolicy node of address", Err: ErrEmptySet}
	}
	var node int32
	_, _, e := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&node)), 0, 0,
		uintptr(unsafe.Pointer(&b[0])), mpolFNode|mpolFAddr, 0)
	runtime.KeepAlive(b)
	if e != 0 {
		return -1, &Error{Op: "get_mempolicy node of address", Err: e}
	}
	return int(node), nil
}
