//go:build linux

package topology

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// schedAffinity returns the calling thread's affinity mask
// (sched_getaffinity(0)). unix.CPUSet holds 1024 CPUs, the glibc
// CPU_SETSIZE; a machine with more CPUs than that is cut to the first 1024.
func schedAffinity() (cpuset.Set, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return cpuset.Set{}, fmt.Errorf("topology: sched_getaffinity: %w", err)
	}
	var s cpuset.Set
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			s.Add(i)
		}
	}
	return s, nil
}

// liveArch returns uname's machine field ("x86_64", "aarch64").
func liveArch() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Machine[:])
}
