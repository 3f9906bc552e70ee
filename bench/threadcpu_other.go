//go:build !linux

package bench

import "time"

// threadCPU reports that the thread's CPU time is not read here.
func threadCPU() (time.Duration, bool) { return 0, false }

// processCPU reports that the process's CPU time is not read here.
func processCPU() (time.Duration, bool) { return 0, false }

// childrenCPU reports that the children's CPU time is not read here.
func childrenCPU() (time.Duration, bool) { return 0, false }

// machineCPU reports that the machine's CPU time is not read here.
func machineCPU() (total, idle float64, ok bool) { return 0, 0, false }
