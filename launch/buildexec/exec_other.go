//go:build !linux

package buildexec

import "errors"

// Config configures Exec.
type Config struct {
	Args    []string
	Serve   []string
	Getenv  func(string) string
	Environ func() []string
}

// Exec fails: the daemon's jobserver is served on Linux only.
func Exec(cfg Config) error {
	return errors.New("numasteal exec: supported on Linux only")
}
