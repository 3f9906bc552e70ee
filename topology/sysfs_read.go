package topology

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// reader reads the small text files of sysfs and procfs below a root. It is
// used by one goroutine: its buffer is reused, so the bytes a read returns
// are valid only until the next read.
//
// Missing files are normal (old kernels lack half of what new ones export),
// so every read says whether the file exists; only other I/O errors and
// malformed content become errors, always a *FileError naming the file
// relative to the root.
type reader struct {
	root string // "/" or a cleaned directory without trailing slash
	buf  []byte
	dirs dirCache // open directories that relative opens start from
}

func newReader(root string) *reader {
	return &reader{root: root, buf: make([]byte, 4096)}
}

// close releases the reader's open directories.
func (r *reader) close() { r.dirs.close() }

// fork returns a reader for another goroutine: same root and open
// directories (call openDirs first), its own buffer. It must not be closed.
func (r *reader) fork() *reader {
	return &reader{root: r.root, buf: make([]byte, 4096), dirs: r.dirs.borrow()}
}

// abs returns the absolute path of rel, a slash-separated path relative to
// the root.
func (r *reader) abs(rel string) string {
	if r.root == "/" {
		return "/" + rel
	}
	return r.root + "/" + rel
}

// absent reports whether err means "the file is not there": not existing,
// a path component that is not a directory, or (for files a kernel makes
// root-only) no permission to read it.
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) ||
		errors.Is(err, fs.ErrPermission)
}

// read returns the content of rel; ok is false when the file is absent.
func (r *reader) read(rel string) (data []byte, ok bool, err error) {
	return r.readLimit(rel, 0)
}

// readLimit is read stopping after about limit bytes (0: no limit), for
// big files of which only the beginning matters (proc/cpuinfo of a
// 256-CPU machine is 200 kB; we want its first processor).
func (r *reader) readLimit(rel string, limit int) (data []byte, ok bool, err error) {
	n, err := r.readInto(rel, strings.HasPrefix(rel, "sys/"), limit)
	if err != nil {
		if absent(err) {
			return nil, false, nil
		}
		return nil, false, &FileError{Path: rel, Err: err}
	}
	return r.buf[:n], true, nil
}

// text returns the content of rel with surrounding white space removed.
// The text ends at the first NUL byte: the kernel never writes one, but
// old dump tools padded some files with NULs, and C readers such as hwloc
// never see past it.
func (r *reader) text(rel string) (string, bool, error) {
	b, ok, err := r.read(rel)
	if !ok || err != nil {
		return "", ok, err
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(bytes.TrimSpace(b)), true, nil
}

// names lists the entries of directory rel; ok is false when it is absent.
//
// Under a dump, a named pipe or device where a directory belongs is an
// error (ErrNotRegular), checked before the open that would block on it.
func (r *reader) names(rel string) ([]string, bool, error) {
	if r.root != "/" {
		if fi, err := os.Stat(r.abs(rel)); err == nil && !fi.IsDir() && !fi.Mode().IsRegular() {
			return nil, false, &FileError{Path: rel, Err: ErrNotRegular}
		}
	}
	f, err := os.Open(r.abs(rel))
	if err != nil {
		if absent(err) {
			return nil, false, nil
		}
		return nil, false, &FileError{Path: rel, Err: err}
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		if absent(err) {
			return nil, false, nil
		}
		return nil, false, &FileError{Path: rel, Err: err}
	}
	return names, true, nil
}

// int reads a file holding one decimal integer (negative allowed, as in
// physical_package_id = -1).
func (r *reader) int(rel string) (int, bool, error) {
	t, ok, err := r.text(rel)
	if !ok || err != nil {
		return 0, ok, err
	}
	v, err := parseInt(t)
	if err != nil {
		return 0, true, &FileError{Path: rel, Text: clip(t), Err: err}
	}
	return v, true, nil
}

// list reads a file holding a cpulist ("0-3,8"): cpu/online, node/online,
// nodeN/cpulist, the *_list topology files, cgroup cpuset files.
func (r *reader) list(rel string) (cpuset.Set, bool, error) {
	return r.set(rel, true)
}

// set reads a CPU or node set from rel, a cpulist when isList and a
// bitmask ("ff,0000000f": cpumap, shared_cpu_map, thread_siblings)
// otherwise.
func (r *reader) set(rel string, isList bool) (cpuset.Set, bool, error) {
	t, ok, err := r.text(rel)
	if !ok || err != nil {
		return cpuset.Set{}, ok, err
	}
	var s cpuset.Set
	if isList {
		s, err = cpuset.Parse(t)
	} else {
		s, err = cpuset.ParseMask(t)
	}
	if err != nil {
		return cpuset.Set{}, true, &FileError{Path: rel, Text: clip(t), Err: err}
	}
	return s, true, nil
}

// alts is a list of file names that carry the same information under
// different kernel versions (core_cpus_list, thread_siblings_list,
// core_cpus, thread_siblings), with a memory of which one worked last time.
// The kernel exports the same attributes for every CPU, so the name that
// worked is tried first next time; and when rememberAbsent is set, an
// attribute that the first CPU asked about lacks (die_cpus on a kernel
// older than 5.2) is not looked for again. This roughly halves the failed
// opens on old dumps.
type alts struct {
	names          []string
	rememberAbsent bool
	pref           int  // index of the name that worked last
	tried          bool // a lookup was made
	none           bool // the first lookup found no name at all
}

func newAlts(rememberAbsent bool, names ...string) *alts {
	return &alts{names: names, rememberAbsent: rememberAbsent}
}

// setAlt reads the first existing file of a among dir/name; a name that
// ends in "list" holds a cpulist, any other a bitmask.
func (r *reader) setAlt(dir string, a *alts) (cpuset.Set, bool, error) {
	if a.none {
		return cpuset.Set{}, false, nil
	}
	for k := range a.names {
		i := k
		if k == 0 {
			i = a.pref
		} else if k <= a.pref {
			i = k - 1
		}
		name := a.names[i]
		s, ok, err := r.set(dir+"/"+name, strings.HasSuffix(name, "list"))
		if err != nil {
			return cpuset.Set{}, true, err
		}
		if ok {
			a.pref, a.tried = i, true
			return s, true, nil
		}
	}
	if !a.tried && a.rememberAbsent {
		a.none = true
	}
	a.tried = true
	return cpuset.Set{}, false, nil
}

// itoa is strconv.Itoa, short for the many path joins.
func itoa(i int) string { return strconv.Itoa(i) }
