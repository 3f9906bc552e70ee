package buildgraph

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Writing output files: never through a link planted at the path.
//
// os.Create follows a symbolic link at its path, and truncates whatever
// the link names: a link that another user left at /tmp/trace.json made
// root's numasteal overwrite a root-owned file. So every file numasteal
// writes (the history, the trace) is written to a new temporary file in
// the same directory, opened with O_CREAT|O_EXCL|O_NOFOLLOW (so it is a
// new file and no link, and whoever owns the directory cannot have placed
// it), and then renamed over the path. rename(2) replaces a link at the
// path instead of writing through it, and a crash leaves the old file or
// the new one, never half of one.
//
// The temporary file is named "<name>.tmp.<pid>.<random>": a run killed
// between create and rename leaves one behind, and the next write of the
// same path removes those whose process is gone (CleanStaleTemps).
// O_TMPFILE and linkat would leave nothing, but linkat cannot replace an
// existing file, so a named temporary would still be needed for the
// rename, and O_TMPFILE is not on every file system (not on NFS or FUSE).

// WriteFileAtomic writes the file at path with write: to a new temporary
// file in path's directory, created with mode perm (less the umask), then
// renamed over path. A link at path is replaced, never followed. On error
// the temporary file is removed and path is unchanged.
func WriteFileAtomic(path string, perm os.FileMode, write func(io.Writer) error) (err error) {
	CleanStaleTemps(path)
	tmp, err := createTemp(path, perm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriterSize(tmp, 64<<10)
	if err = write(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// tempMarker separates a path from the pid and random suffix of its
// temporary files.
const tempMarker = ".tmp."

// createTemp creates a new temporary file for path in its directory.
func createTemp(path string, perm os.FileMode) (*os.File, error) {
	var rnd [6]byte
	for range 10 {
		rand.Read(rnd[:])
		name := path + tempMarker + strconv.Itoa(os.Getpid()) + "." + hex.EncodeToString(rnd[:])
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, perm)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("buildgraph: cannot create a temporary file for %s", path)
}

// staleAge is how old a temporary file must be before CleanStaleTemps
// removes it although its pid is alive: pids are reused, and no write
// takes an hour.
const staleAge = time.Hour

// CleanStaleTemps removes the temporary files that WriteFileAtomic left
// beside path in runs that were killed: those whose process is gone, or
// older than an hour. It removes only regular files of that name pattern,
// owned by the caller (a directory such as /tmp is shared), and ignores
// every error: cleaning is a courtesy.
func CleanStaleTemps(path string) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	prefix := base + tempMarker
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		pidText, _, ok := strings.Cut(rest, ".")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		p := filepath.Join(dir, name)
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
			continue
		}
		if pid == os.Getpid() || processAlive(pid) && time.Since(fi.ModTime()) < staleAge {
			continue
		}
		os.Remove(p)
	}
}

// processAlive reports whether a process pid exists (kill with signal 0:
// EPERM means it exists but is another user's).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Save writes the trace to path with WriteFileAtomic: a link planted at
// path is replaced, not written through. The file is created 0666 less
// the umask, as any tool's output.
func (w *TraceWriter) Save(path string) error {
	if err := writeAtomic(path, w); err != nil {
		return fmt.Errorf("buildgraph: writing trace %s: %w", path, err)
	}
	return nil
}

// writeAtomic writes v's WriteTo output to path with WriteFileAtomic, mode
// 0666 less the umask.
func writeAtomic(path string, v io.WriterTo) error {
	return WriteFileAtomic(path, 0o666, func(out io.Writer) error {
		_, err := v.WriteTo(out)
		return err
	})
}
