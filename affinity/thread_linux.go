package affinity

import (
	"errors"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// PinThread restricts the calling OS thread to the CPUs in set
// (sched_setaffinity on thread 0, the caller).
//
// The caller must have locked its goroutine to the thread with
// runtime.LockOSThread, or the pin applies to whatever thread the goroutine
// happens to be on and to every goroutine that runs there later; see the
// package documentation, or use LockAndPin.
//
// The kernel accepts any set that holds at least one CPU that is online and
// allowed by the cgroup, and silently drops the rest; a set with none of
// them is refused with EINVAL. An empty set is refused with ErrEmptySet
// before the system call.
func PinThread(set cpuset.Set) error {
	return setAffinity(0, set)
}

// LockAndPin locks the calling goroutine to its OS thread and pins the
// thread to set. The returned unlock restores the thread's previous mask and
// unlocks it; call it from the same goroutine, once (later calls do nothing).
//
// If the old mask can no longer be restored (its CPUs went offline, or the
// cgroup took them away), unlock leaves the goroutine locked, so that the
// runtime ends the thread when the goroutine exits instead of handing a
// pinned thread to other goroutines.
//
// On failure the goroutine is unlocked again and unlock is nil.
func LockAndPin(set cpuset.Set) (unlock func(), err error) {
	runtime.LockOSThread()
	old, err := Allowed()
	if err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	if err := PinThread(set); err != nil {
		// A refused sched_setaffinity changes nothing.
		runtime.UnlockOSThread()
		return nil, err
	}
	done := false
	return func() {
		if done {
			return
		}
		done = true
		if PinThread(old) == nil {
			runtime.UnlockOSThread()
		}
	}, nil
}

// Allowed returns the CPUs the calling thread may run on
// (sched_getaffinity). It is the process's affinity mask unless this thread
// was pinned, so read it before pinning, or from a thread that is not
// pinned.
func Allowed() (cpuset.Set, error) {
	return getAffinity(0)
}

// CurrentCPU returns the CPU the calling thread is running on and that CPU's
// NUMA node, from the getcpu system call. Unless the thread is pinned to a
// single CPU, the answer may be stale by the time it is returned.
func CurrentCPU() (cpu, node int, err error) {
	var c, n uint32
	_, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&c)), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return -1, -1, &Error{Op: "getcpu", Err: e}
	}
	return int(c), int(n), nil
}

// setAffinity is sched_setaffinity(pid, set) with errors naming the set.
func setAffinity(pid int, set cpuset.Set) error {
	if set.IsEmpty() {
		return &Error{Op: "sched_setaffinity", Pid: pid, Unit: "CPUs", Err: ErrEmptySet}
	}
	m := kernelMask(set)
	_, _, e := unix.Syscall(unix.SYS_SCHED_SETAFFINITY, uintptr(pid), maskBytes(m), uintptr(unsafe.Pointer(&m[0])))
	runtime.KeepAlive(m)
	if e != 0 {
		return &Error{Op: "sched_setaffinity", Pid: pid, Unit: "CPUs", Set: set.String(), Err: e}
	}
	return nil
}

// maxMaskBits bounds the buffer getAffinity offers the kernel; Linux's
// CONFIG_NR_CPUS tops out at 8192.
const maxMaskBits = 1 << 20

// getAffinity is sched_getaffinity(pid). The kernel refuses (EINVAL) a
// buffer shorter than its nr_cpu_ids, so the buffer starts at 1024 CPUs and
// doubles until it is long enough.
func getAffinity(pid int) (cpuset.Set, error) {
	for nbits := 1024; ; nbits *= 2 {
		m := make([]uint, nbits/(8*int(unsafe.Sizeof(uint(0)))))
		n, _, e := unix.Syscall(unix.SYS_SCHED_GETAFFINITY, uintptr(pid), maskBytes(m), uintptr(unsafe.Pointer(&m[0])))
		runtime.KeepAlive(m)
		switch {
		case e == 0:
			// n is the number of bytes the kernel wrote.
			return setFromMask(m[:int(n)/int(unsafe.Sizeof(uint(0)))]), nil
		case errors.Is(e, unix.EINVAL) && nbits < maxMaskBits:
			continue
		default:
			return cpuset.Set{}, &Error{Op: "sched_getaffinity", Pid: pid, Err: e}
		}
	}
}
