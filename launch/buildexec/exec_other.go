//go:build !linux

package buildexec

import "errors"

// Exec fails: the daemon's jobserver is served on Linux only.
func Exec(cfg Config) error {
	return errors.New("numasteal exec: supported on Linux only")
}
