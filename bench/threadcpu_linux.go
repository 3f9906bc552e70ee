//go:build linux

package bench

import (
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// threadCPU returns the CPU time the calling thread has used; ok is false
// when the clock cannot be read. The caller locks its goroutine to the
// thread around the two readings it subtracts.
func threadCPU() (d time.Duration, ok bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

// processCPU returns the CPU time this process's threads have used (not
// its children's); ok is false when it cannot be read.
func processCPU() (d time.Duration, ok bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}

// childrenCPU returns the CPU time of this process's reaped children and
// of the descendants they reaped; ok is false when it cannot be read.
func childrenCPU() (d time.Duration, ok bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_CHILDREN, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// machineCPU returns the machine's CPU time since boot, summed over its
// CPUs, in seconds: all of it, and the part idle (waiting for I/O
// included); ok is false when /proc/stat cannot be read.
func machineCPU() (total, idle float64, ok bool) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, 0, false
	}
	st, err := fs.Stat()
	if err != nil {
		return 0, 0, false
	}
	c := st.CPUTotal
	idle = c.Idle + c.Iowait
	return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal + idle, idle, true
}
