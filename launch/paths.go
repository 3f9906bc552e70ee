package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
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
	// Unusable, when set, says why $XDG_RUNTIME_DIR was passed over for
	// $TMPDIR/numasteal-UID: one sentence naming it, for a warning.
	Unusable string
}

// PathsFromEnv returns the paths for environment lookups getenv:
// $NUMASTEAL_SOCKET names the socket (its directory holds the rest); else
// $XDG_RUNTIME_DIR/numasteal when $XDG_RUNTIME_DIR is usable (see
// usableRuntimeDir); else $TMPDIR (or /tmp)/numasteal-UID, with Unusable
// saying why when $XDG_RUNTIME_DIR was set. The directory is not created
// (but for numasteal in a usable $XDG_RUNTIME_DIR); see Paths.Ensure.
func PathsFromEnv(getenv func(string) string) Paths {
	var dir, sock, unusable string
	if s := getenv("NUMASTEAL_SOCKET"); s != "" {
		sock = filepath.Clean(s)
		dir = filepath.Dir(sock)
	} else {
		x := getenv("XDG_RUNTIME_DIR")
		if x != "" {
			if why := usableRuntimeDir(x); why != "" {
				unusable = fmt.Sprintf("$XDG_RUNTIME_DIR (%s) %s", x, why)
				x = ""
			}
		}
		if x != "" {
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

		Unusable: unusable,
	}
}

// usableRuntimeDir returns "" when x can hold the daemon's directory, as
// the XDG Base Directory specification has it: a directory (not a link to
// one), owned by this user, that this user can write, in which numasteal's
// directory exists or can be made; else why not, as the end of a sentence.
// A missing runtime directory is never created.
func usableRuntimeDir(x string) string {
	fi, err := os.Lstat(x)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "does not exist"
	case err != nil:
		return "cannot be read: " + errText(err)
	case !fi.IsDir():
		return "is not a directory"
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Sprintf("belongs to uid %d, not to uid %d", st.Uid, os.Getuid())
	}
	if err := unix.Access(x, unix.W_OK|unix.X_OK); err != nil {
		return "is not writable"
	}
	if err := os.Mkdir(filepath.Join(x, "numasteal"), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "is unusable (making numasteal in it: " + errText(err) + ")"
	}
	return ""
}

// errText is err's text without the operation and path a *PathError
// repeats.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Ensure creates p.Dir (0700) if it is missing, in a parent that must
// exist (a missing $TMPDIR or socket directory is not made), and checks
// that it is a directory, not a symbolic link, owned by this user and
// closed to others. A directory that fails the check is refused, never
// used: another user could have planted it.
func (p Paths) Ensure() error {
	if err := os.Mkdir(p.Dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(p.Dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", p.Dir)
	case ok && int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s belongs to another user (uid %d, not %d)", p.Dir, st.Uid, os.Getuid())
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("%s is open to others (mode %v); want 0700", p.Dir, fi.Mode().Perm())
	}
	return nil
}

// OtherUserError is the error of a daemon on socket that is another
// user's (it refused us, or its socket or directory cannot be reached),
// naming that user when the socket or its directory shows it; nil when
// neither belongs to another user.
func OtherUserError(socket string) error {
	for _, p := range []string{socket, filepath.Dir(socket)} {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
			return fmt.Errorf("the numasteal daemon on %s belongs to another user (uid %d)", socket, st.Uid)
		}
		return nil
	}
	return nil
}
