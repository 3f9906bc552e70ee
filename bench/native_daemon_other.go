//go:build !linux

package bench

import "golang.org/x/sys/unix"

// processHandle signals one process by its pid.
type processHandle struct{ pid int }

func openProcess(pid int) (processHandle, error) { return processHandle{pid: pid}, nil }

func (h processHandle) signal(sig unix.Signal) error { return unix.Kill(h.pid, sig) }

func (h processHandle) close() {}
