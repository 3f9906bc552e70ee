//go:build !linux

package memory

// Tree returns nil: process trees are read from Linux's /proc.
func Tree(proc string, pid int) []int { return nil }

// TreeRSS returns 0: process trees are read from Linux's /proc.
func TreeRSS(proc string, pid int) int64 { return 0 }

// SignalTree does nothing off Linux.
func SignalTree(proc string, pid int, stop bool) error { return nil }

func signalPending(proc string, pid int) bool { return false }

// Children returns nil: process trees are read from Linux's /proc.
func Children(proc string, pid int) []int { return nil }
