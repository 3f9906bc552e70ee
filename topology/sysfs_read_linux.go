//go:build linux

package topology

import (
	"strings"

	"golang.org/x/sys/unix"
)

// dirCache holds directories opened with O_PATH so that files below them
// are opened with openat and a short relative path. Every open walks its
// path one component at a time, and the files of a discovery sit seven to
// twelve components deep; starting from sys/devices/system/cpu or
// sys/devices/system/node saves most of that walk (hwloc opens relative to
// its fsroot directory for the same reason).
type dirCache struct {
	entries  []dirEntry
	borrowed bool // entries belong to another reader, which closes them
}

type dirEntry struct {
	prefix string // relative directory with a trailing slash, "" for the root
	fd     int    // -1 when it could not be opened
}

// cachedDirs are the directories worth holding open, longest first.
var cachedDirs = [...]string{cpuDir + "/", nodeDir + "/", ""}

// borrow returns a view of c's directories for a forked reader.
func (c *dirCache) borrow() dirCache {
	return dirCache{entries: c.entries, borrowed: true}
}

func (c *dirCache) close() {
	if c.borrowed {
		return
	}
	for _, e := range c.entries {
		if e.fd >= 0 {
			unix.Close(e.fd)
		}
	}
	c.entries = nil
}

// openDirs opens the cached directories, once.
func (r *reader) openDirs() {
	if r.dirs.entries != nil {
		return
	}
	entries := make([]dirEntry, 0, len(cachedDirs))
	for _, p := range cachedDirs {
		fd, err := unix.Open(r.abs(p), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		entries = append(entries, dirEntry{prefix: p, fd: fd})
	}
	r.dirs.entries = entries
}

// dirFor returns an open directory holding rel and rel's path below it, or
// AT_FDCWD and the absolute path.
func (r *reader) dirFor(rel string) (int, string) {
	r.openDirs()
	for _, e := range r.dirs.entries {
		if e.fd >= 0 && strings.HasPrefix(rel, e.prefix) && len(rel) > len(e.prefix) {
			return e.fd, rel[len(e.prefix):]
		}
	}
	return unix.AT_FDCWD, r.abs(rel)
}

// readInto reads rel into r.buf, growing it as needed, and returns the
// number of bytes read, stopping once it has limit bytes when limit > 0.
//
// It calls openat/read/close directly: os.Open adds fcntl calls and a
// failed epoll registration per file, which would more than double the
// system calls of a discovery (a 256-CPU dump opens about 1,250 files). A sysfs
// attribute is at most a page and comes whole from the first read, and so
// does a dump's regular file, so for those (whole) a short read is taken as
// the end of the file; procfs files are read until read returns 0, because
// seq_file may return less than asked before the end.
//
// Under a dump (a root other than "/") a file may be anything a user left
// there: a named pipe would block open(2) forever, /dev/zero would fill
// memory. So there the file is opened with O_NONBLOCK, refused unless
// fstat says it is a regular file (ErrNotRegular), and refused beyond
// maxDumpFile bytes (ErrTooLarge). The live /sys and /proc, whose files
// are the kernel's, are read as before, without the extra fstat.
func (r *reader) readInto(rel string, whole bool, limit int) (int, error) {
	dir, p := r.dirFor(rel)
	dump := r.root != "/"
	flags := unix.O_RDONLY | unix.O_CLOEXEC
	if dump {
		flags |= unix.O_NONBLOCK
	}
	fd, err := unix.Openat(dir, p, flags, 0)
	for err == unix.EINTR {
		fd, err = unix.Openat(dir, p, flags, 0)
	}
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	if dump {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return 0, err
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return 0, ErrNotRegular
		}
		if st.Size > maxDumpFile {
			return 0, ErrTooLarge
		}
	}
	n := 0
	for {
		if dump && n > maxDumpFile {
			return 0, ErrTooLarge
		}
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		m, err := unix.Read(fd, r.buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		n += m
		if m == 0 || whole && n < len(r.buf) || limit > 0 && n >= limit {
			return n, nil
		}
	}
}
