//go:build !linux

package launch

// Without pidfds Builds reads /proc for every launcher.
func openPidfd(pid int) int  { return -1 }
func pidfdAlive(fd int) bool { return false }
func closePidfd(fd int)      {}
