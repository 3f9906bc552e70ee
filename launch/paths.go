package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Paths are the files of one user's daemon, all in one directory that only
// that user may enter (0700, owned by them).
type Paths struct {
	Dir    string // the directory
	Socket string // the daemon's Unix socket
	Lock   string // held (flock) by the live daemon for its whole life
	Start  string // held by the one launcher starting a daemon
	Log    string // the daemon's standard error
	Warned string // directory of per-build "warned" markers
}

// PathsFromEnv returns the paths for environment lookups getenv:
// $NUMASTEAL_SOCKET names the socket (its directory holds the rest); else
// $XDG_RUNTIME_DIR/numasteal; else $TMPDIR (or /tmp)/numasteal-UID. The
// directory is not created; see Paths.Ensure.
func PathsFromEnv(getenv func(string) string) Paths {
	var dir, sock string
	if s := getenv("NUMASTEAL_SOCKET"); s != "" {
		sock = filepath.Clean(s)
		dir = filepath.Dir(sock)
	} else {
		if x := getenv("XDG_RUNTIME_DIR"); x != "" {
			dir = filepath.Join(x, "numasteal")
		} else {
			tmp := getenv("TMPDIR")
			if tmp == "" {
				tmp = "/tmp"
			}
			dir = filepath.Join(tmp, "numasteal-"+strconv.Itoa(os.Getuid()))
		}
		sock = filepath.Join(dir, "sock")
	}
	base := filepath.Base(sock)
	return Paths{
		Dir:    dir,
		Socket: sock,
		Lock:   filepath.Join(dir, base+".lock"),
		Start:  filepath.Join(dir, base+".start"),
		Log:    filepath.Join(dir, base+".log"),
		Warned: filepath.Join(dir, base+".warned"),
	}
}

// Ensure creates p.Dir (0700) if it is missing and checks that it is a
// directory, not a symbolic link, owned by this user and closed to others.
// A directory that fails the check is refused, never used: another user
// could have planted it.
func (p Paths) Ensure() error {
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(p.Dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("launch: %s is not a directory", p.Dir)
	case ok && int(st.Uid) != os.Getuid():
		return fmt.Errorf("launch: %s belongs to uid %d, not %d", p.Dir, st.Uid, os.Getuid())
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("launch: %s is open to others (mode %v); want 0700", p.Dir, fi.Mode().Perm())
	}
	return nil
}
