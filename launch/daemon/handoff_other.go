//go:build !linux

package daemon

import "os"

// openPidfd returns nil: without pidfds the daemon grants no handoffs.
func openPidfd(pid int) *os.File { return nil }

// waitExit is never called without a pidfd.
func waitExit(f *os.File) {}
