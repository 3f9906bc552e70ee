//go:build !linux

package proc

import (
	"errors"
	"os"
)

// openTmpfile fails: O_TMPFILE is Linux's; newFile falls back to a named
// file removed at once.
func openTmpfile(dir string) (*os.File, error) {
	return nil, errors.New("no O_TMPFILE on this system")
}
