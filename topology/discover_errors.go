package topology

import (
	"errors"
	"strconv"
)

// FileError reports a file under the discovery root that could not be read
// or whose content is malformed. Path is relative to the root (for example
// "sys/devices/system/node/node1/distance") and Text is the offending text,
// trimmed and cut to 120 bytes, or "" when the file could not be read at
// all. Err is the underlying error: a *cpuset.ParseError, a
// *strconv.NumError, one of the Err* values below, or an I/O error.
type FileError struct {
	Path string
	Text string
	Err  error
}

// Error implements error.
func (e *FileError) Error() string {
	if e.Text == "" {
		return "topology: " + e.Path + ": " + e.Err.Error()
	}
	return "topology: " + e.Path + " " + strconv.Quote(e.Text) + ": " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *FileError) Unwrap() error { return e.Err }

// Errors wrapped by FileError for content that no other parser rejects.
var (
	// ErrSyntax: the text is not in the format the kernel writes.
	ErrSyntax = errors.New("invalid syntax")
	// ErrRange: a number is out of the range the file allows.
	ErrRange = errors.New("value out of range")
	// ErrMissing: a line or field the file must hold is absent.
	ErrMissing = errors.New("missing field")
	// ErrNotRegular: a file of a dump (WithRoot) is not a regular file,
	// such as a named pipe or a device, which could block or never end.
	ErrNotRegular = errors.New("not a regular file (a dump holds only regular files)")
	// ErrTooLarge: a file of a dump is larger than any sysfs or procfs
	// file a dump tool copies (maxDumpFile).
	ErrTooLarge = errors.New("file too large for a sysfs or procfs file (over 16 MiB)")
)

// maxDumpFile bounds a file read from a dump: a sysfs attribute is at
// most a page, and /proc/cpuinfo of a machine of thousands of CPUs a few
// MiB.
const maxDumpFile = 16 << 20

// ErrNoUsableCPU is returned (wrapped) by Discover when no online CPU is
// allowed, for instance when a cgroup cpuset names only offline CPUs.
var ErrNoUsableCPU = errors.New("topology: no usable CPU")

// maxErrText bounds FileError.Text so a huge garbage file does not make a
// huge error message.
const maxErrText = 120

func clip(text string) string {
	if len(text) > maxErrText {
		return text[:maxErrText] + "..."
	}
	return text
}
