package affinity

import (
	"strconv"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// Mode is a NUMA memory policy mode, numbered as linux/mempolicy.h numbers
// the MPOL_* constants.
type Mode int

// The memory policy modes. The numbers are the kernel's MPOL_* values.
const (
	// Default removes the thread's policy: allocations follow the policy of
	// the memory range, and by default come from the node of the CPU that
	// touches the page first. Takes no nodes.
	Default Mode = 0
	// Preferred allocates from the one node given (the lowest in the set)
	// and falls back to other nodes when it is full. An empty set means
	// Local.
	Preferred Mode = 1
	// Bind allocates only from the nodes given; the kernel refuses a set
	// with no node that has memory (EINVAL).
	Bind Mode = 2
	// Interleave spreads page allocations round-robin over the nodes given.
	Interleave Mode = 3
	// Local allocates from the node of the CPU that allocates (MPOL_LOCAL,
	// Linux 3.8). Takes no nodes.
	Local Mode = 4
	// PreferredMany prefers any of the nodes given (Linux 5.15).
	PreferredMany Mode = 5
	// WeightedInterleave interleaves by the weights in
	// /sys/kernel/mm/mempolicy/weighted_interleave (Linux 6.9).
	WeightedInterleave Mode = 6
)

// modeNames are the names String gives, indexed by Mode.
var modeNames = [...]string{"default", "preferred", "bind", "interleave", "local", "preferred-many", "weighted-interleave"}

// String returns the mode's name as numactl and /proc/PID/numa_maps write it
// ("bind", "interleave", ...), or "mode(N)" for an unknown number.
func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// needsNodes reports whether the mode is meaningless without nodes, so that
// an empty set is refused before the system call.
func (m Mode) needsNodes() bool {
	return m == Bind || m == Interleave || m == PreferredMany || m == WeightedInterleave
}

// MemPolicy is a memory policy: a mode and the nodes it applies to.
type MemPolicy struct {
	Mode  Mode
	Nodes cpuset.Set // empty for Default and Local
}

// String returns "bind:0-1" style text (the mode alone when Nodes is
// empty).
func (p MemPolicy) String() string {
	if p.Nodes.IsEmpty() {
		return p.Mode.String()
	}
	return p.Mode.String() + ":" + p.Nodes.String()
}
