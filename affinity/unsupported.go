//go:build !linux

package affinity

import (
	"os/exec"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// This file keeps the package's API on systems other than Linux, where every
// call fails with an *Error wrapping ErrUnsupported and changes nothing.

// PinThread restricts the calling OS thread to set (Linux only).
func PinThread(set cpuset.Set) error { return unsupported("sched_setaffinity", "CPUs", set) }

// LockAndPin locks the goroutine to its thread and pins it (Linux only).
func LockAndPin(set cpuset.Set) (unlock func(), err error) {
	return nil, unsupported("sched_setaffinity", "CPUs", set)
}

// Allowed returns the CPUs the calling thread may run on (Linux only).
func Allowed() (cpuset.Set, error) {
	return cpuset.Set{}, unsupported("sched_getaffinity", "", cpuset.Set{})
}

// CurrentCPU returns the CPU and node the thread runs on (Linux only).
func CurrentCPU() (cpu, node int, err error) {
	return -1, -1, unsupported("getcpu", "", cpuset.Set{})
}

// SetProcessAffinity restricts process pid to set (Linux only).
func SetProcessAffinity(pid int, set cpuset.Set) error {
	return unsupported("sched_setaffinity", "CPUs", set)
}

// ProcessAffinity returns the CPUs process pid may run on (Linux only).
func ProcessAffinity(pid int) (cpuset.Set, error) {
	return cpuset.Set{}, unsupported("sched_getaffinity", "", cpuset.Set{})
}

// SetMemPolicy sets the calling thread's memory policy (Linux only).
func SetMemPolicy(mode Mode, nodes cpuset.Set) error {
	return unsupported("set_mempolicy "+mode.String(), "nodes", nodes)
}

// GetMemPolicy returns the calling thread's memory policy (Linux only).
func GetMemPolicy() (MemPolicy, error) {
	return MemPolicy{}, unsupported("get_mempolicy", "", cpuset.Set{})
}

// PageNode returns the node holding the page of b[0] (Linux only).
func PageNode(b []byte) (int, error) {
	return -1, unsupported("get_mempolicy node of address", "", cpuset.Set{})
}

// StartPinned starts cmd confined to set (Linux only); it does not start
// cmd here.
func StartPinned(cmd *exec.Cmd, set cpuset.Set) error {
	return unsupported("sched_setaffinity", "CPUs", set)
}

// StartPlaced starts cmd with placement p (Linux only); it does not start
// cmd here.
func StartPlaced(cmd *exec.Cmd, p Placement) error {
	return unsupported("sched_setaffinity", "CPUs", p.CPUs)
}

// unsupported builds the error every function returns here.
func unsupported(op, unit string, set cpuset.Set) error {
	return &Error{Op: op, Unit: unit, Set: set.String(), Err: ErrUnsupported}
}
