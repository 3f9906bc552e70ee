//go:build linux

package bench

import (
	"time"

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
