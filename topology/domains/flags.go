// Flags: the balancing behaviours a domain allows, Linux's SD_* flags.

package domains

import "strings"

// Flags are the balancing behaviours a domain allows, after Linux's SD_* flags.
type Flags uint32

// The flags. Their meaning follows include/linux/sched/sd_flags.h.
const (
	FlagBalanceNewIdle   Flags = 1 << iota // SD_BALANCE_NEWIDLE: balance when a CPU goes idle
	FlagBalanceExec                        // SD_BALANCE_EXEC: place on exec
	FlagBalanceFork                        // SD_BALANCE_FORK: place on fork / new task
	FlagBalanceWake                        // SD_BALANCE_WAKE: place on wake-up
	FlagWakeAffine                         // SD_WAKE_AFFINE: wake near the waker
	FlagShareCPUCapacity                   // SD_SHARE_CPUCAPACITY: SMT siblings
	FlagShareLLC                           // SD_SHARE_LLC (was SD_SHARE_PKG_RESOURCES)
	FlagSerialize                          // SD_SERIALIZE: one balancer at a time machine-wide
	FlagNUMA                               // SD_NUMA: crosses NUMA nodes
	FlagAsymCapacity                       // SD_ASYM_CPUCAPACITY: spans CPUs of different capacity
	FlagAsymCapacityFull                   // SD_ASYM_CPUCAPACITY_FULL: spans every capacity there is
	FlagPreferSibling                      // SD_PREFER_SIBLING: spread tasks to sibling groups first
	FlagCluster                            // SD_CLUSTER: cores sharing a cluster (L2 or cluster_id)
	FlagOverlap                            // SD_OVERLAP: groups may overlap (NUMA levels)
)

// flagNames are the kernel names of the flags, in bit order.
var flagNames = [...]string{
	"SD_BALANCE_NEWIDLE",
	"SD_BALANCE_EXEC",
	"SD_BALANCE_FORK",
	"SD_BALANCE_WAKE",
	"SD_WAKE_AFFINE",
	"SD_SHARE_CPUCAPACITY",
	"SD_SHARE_LLC",
	"SD_SERIALIZE",
	"SD_NUMA",
	"SD_ASYM_CPUCAPACITY",
	"SD_ASYM_CPUCAPACITY_FULL",
	"SD_PREFER_SIBLING",
	"SD_CLUSTER",
	"SD_OVERLAP",
}

// Names returns the kernel names of the flags set in f ("SD_BALANCE_NEWIDLE",
// ...), in bit order, as /sys/kernel/debug/sched/domains/cpuN/domainM/flags
// lists them. It never returns nil.
func (f Flags) Names() []string {
	out := []string{}
	for i, name := range flagNames {
		if f&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	return out
}

// String returns the flag names joined by "|", or "0" when none is set.
func (f Flags) String() string {
	if f == 0 {
		return "0"
	}
	return strings.Join(f.Names(), "|")
}
