//go:build !linux

package proc

import (
	"errors"
	"syscall"
)

// Process tasks need Linux: elsewhere they start (unpinned) but the group
// plumbing is reduced to nothing, and Subreaper fails.

func waitExited(pid int)                       {}
func signalGroup(pgid int, sig syscall.Signal) {}
func reapGroup(pgid int)                       {}
func setSubreaper() error                      { return errors.New("proc: Subreaper needs Linux") }
func processAttr() *syscall.SysProcAttr        { return nil }
