package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// openTmpfile opens a nameless file for appending in dir (O_TMPFILE).
func openTmpfile(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_APPEND|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), dir+"/(capture)"), nil
}
