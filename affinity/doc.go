// Package affinity places OS threads, child processes and memory on the CPUs
// and NUMA nodes a caller names: it pins threads (sched_setaffinity), asks
// where a thread runs (getcpu), reads the allowed CPUs (sched_getaffinity),
// sets a thread's NUMA memory policy (set_mempolicy) and starts child
// processes that are confined to a CPU set from their first instruction.
//
// # Threads, not goroutines
//
// Linux keeps the affinity mask and the memory policy per thread. A goroutine
// moves between OS threads unless it is locked to one, so a goroutine that
// wants PinThread or SetMemPolicy to mean anything must call
// runtime.LockOSThread first and stay locked for as long as it relies on the
// placement. LockAndPin does both and returns the matching undo.
//
// A thread whose mask or policy was changed must not go back to the Go
// scheduler's pool of threads unchanged, or unrelated goroutines inherit the
// placement. Two patterns are safe:
//
//   - restore, then unlock (what the unlock function from LockAndPin does);
//   - never unlock: when a goroutine exits while locked, the runtime ends its
//     thread instead of reusing it. Long-lived pinned workers do this, and
//     so does StartPinned.
//
// The Go runtime never clones a new thread from a locked one: it asks its
// template thread to do it (see newm in runtime/proc.go), so a pinned thread
// does not pass its mask on to the runtime's future threads.
//
// # Errors
//
// Every refusal of the kernel (EINVAL for an offline or nonexistent CPU or a
// memory-less node, EPERM, ESRCH) comes back as an *Error that names the
// system call and the CPU or node set, and unwraps to the unix.Errno, so
// errors.Is(err, unix.EINVAL) works. An empty set is refused before any
// system call with ErrEmptySet.
//
// Only Linux is supported. On other systems every function returns an error
// wrapping ErrUnsupported, so that code using the package still builds.
package affinity
