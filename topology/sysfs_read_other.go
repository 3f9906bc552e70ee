//go:build !linux

package topology

import (
	"io"
	"os"
)

// dirCache is empty off Linux, where only dumps can be read and the
// portable os calls are good enough.
type dirCache struct{}

func (dirCache) close()           {}
func (dirCache) borrow() dirCache { return dirCache{} }
func (*reader) openDirs()         {}

// readInto reads rel into r.buf, growing it as needed, and returns the
// number of bytes read, stopping once it has limit bytes when limit > 0.
// A file that is not regular is refused before it is opened (a named pipe
// would block), and a file beyond maxDumpFile is refused.
func (r *reader) readInto(rel string, _ bool, limit int) (int, error) {
	if fi, err := os.Stat(r.abs(rel)); err == nil && !fi.Mode().IsRegular() {
		return 0, ErrNotRegular
	} else if err == nil && fi.Size() > maxDumpFile {
		return 0, ErrTooLarge
	}
	f, err := os.Open(r.abs(rel))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	for {
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		m, err := f.Read(r.buf[n:])
		n += m
		if err == io.EOF || m == 0 && err == nil || limit > 0 && n >= limit {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}
