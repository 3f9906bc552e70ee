package launch

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrNotFound: no program of that name in PATH other than the launcher.
var ErrNotFound = errors.New("not found in PATH (other than numasteal itself)")

// FindProgram returns the program name runs as: name itself when it holds
// a '/' (the error of stat(2) when there is no such file), else the first
// executable called name in the directories of path that is not self.
// self is compared by device and inode (so a symbolic link, a hard link
// or another path to the launcher is skipped, the masquerade case: a
// directory of links named gcc, cc, ld... to the launcher, first in
// PATH). A path to self (collect2 runs the ld it found in PATH by its full
// path, a masquerade link) is looked up by its base name the same way.
func FindProgram(name, path string, self *syscall.Stat_t) (string, error) {
	if strings.Contains(name, "/") {
		// Missing, it is reported now: the launcher waits for no slot
		// for it.
		var st syscall.Stat_t
		if err := syscall.Stat(name, &st); err != nil {
			return "", err
		}
		if self == nil || st.Dev != self.Dev || st.Ino != self.Ino {
			return name, nil
		}
		name = filepath.Base(name)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		var st syscall.Stat_t
		if syscall.Stat(p, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Mode&0o111 == 0 {
			continue
		}
		if self != nil && st.Dev == self.Dev && st.Ino == self.Ino {
			continue
		}
		return p, nil
	}
	return "", ErrNotFound
}

func isSelf(p string, self *syscall.Stat_t) bool {
	var st syscall.Stat_t
	return self != nil && syscall.Stat(p, &st) == nil && st.Dev == self.Dev && st.Ino == self.Ino
}

// SelfStat returns the device and inode of the running executable
// (/proc/self/exe), nil when they cannot be read.
func SelfStat() *syscall.Stat_t {
	var st syscall.Stat_t
	if syscall.Stat("/proc/self/exe", &st) != nil {
		return nil
	}
	return &st
}

// IsLauncherName reports whether argv0 names the launcher itself
// (numasteal, numasteal-launch) rather than a masquerade link (gcc, cc,
// ld...).
func IsLauncherName(argv0 string) bool {
	b := filepath.Base(argv0)
	return b == "numasteal" || b == "numasteal-launch" || strings.HasPrefix(b, "numasteal-launch") || strings.HasSuffix(b, ".test")
}
