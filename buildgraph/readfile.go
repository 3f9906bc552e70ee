package buildgraph

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Reading input files: only regular files, and only up to a stated size.
//
// os.ReadFile trusts its path. Given a named pipe it blocks in open(2)
// until a writer appears, which may be never, and no signal handler of Go
// gets it out; given /dev/zero it reads until the heap is exhausted; given
// a 2 GB sparse file it allocates 2 GB before any parser can object. So an
// input is opened with O_NONBLOCK (a FIFO opens at once instead of waiting
// for a writer; a regular file ignores the flag), checked with fstat on the
// descriptor (no race with a rename between stat and open), refused unless
// it is a regular file, refused when larger than the limit, and only then
// read, through an io.LimitReader in case it grows while being read.

// MaxWorkloadBytes is the largest workload file LoadFile reads: 256 MiB,
// some fifty times the compilation database of a full Chromium build.
const MaxWorkloadBytes = 256 << 20

// MaxHistoryBytes is the largest history file LoadHistory reads. A history
// holds about HistoryKeepRuns entries per task, each at most a few KiB (IDs
// are bounded by MaxIDBytes), so 64 MiB is far beyond any real one.
const MaxHistoryBytes = 64 << 20

// ErrNotRegular is wrapped by the error for an input that is not a regular
// file (a named pipe, a device, a directory, a socket).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error for an input above its size limit.
var ErrTooLarge = errors.New("file too large")

// ReadInput reads the regular file at path, of at most limit bytes. The
// errors are *fs.PathError values naming path: one wrapping ErrNotRegular
// (with the kind of file in its text), ErrTooLarge (with the limit), or the
// error of open or read.
func ReadInput(path string, limit int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, path, limit)
}

// openRegular opens path for reading, without blocking, and returns it
// only if it is a regular file.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w (%s); numasteal reads only regular files", ErrNotRegular, FileKind(fi.Mode()))}
	}
	return f, nil
}

// readLimited reads f, a regular file, whole, failing beyond limit bytes.
func readLimited(f *os.File, path string, limit int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, tooLarge(path, fi.Size(), limit)
	}
	data := make([]byte, 0, fi.Size()+1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if int64(len(data)) > limit {
			return nil, tooLarge(path, int64(len(data)), limit)
		}
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func tooLarge(path string, size, limit int64) error {
	return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %s, more than the limit of %s", ErrTooLarge, sizeText(size), sizeText(limit))}
}

// sizeText writes n bytes as "256 MiB", "12 KiB" or "37 bytes".
func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		if n%(1<<20) == 0 {
			return fmt.Sprintf("%d MiB", n>>20)
		}
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// FileKind names the type of a file that is not regular ("a named pipe",
// "a character device"), for messages.
func FileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "an irregular file"
}
