package affinity

import "github.com/numasteal/numasteal/topology/cpuset"

// Placement says where a child process starts: the CPUs it may run on and,
// optionally, the memory policy it starts with. Both are inherited by the
// child's own children.
type Placement struct {
	// CPUs is the affinity mask; it must not be empty.
	CPUs cpuset.Set
	// Mem, when not nil, is the memory policy the child starts with. When
	// nil the child gets the policy the process's threads were started with
	// (normally Default, or what numactl set before starting this process).
	Mem *MemPolicy
}
