package buildgraph

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The history's command hashes are keyed.
//
// A history entry names a command by a hash so that a command whose ID
// changed (a line that moved in a command file) keeps its estimate. An
// unkeyed hash of the command line gives the command away to anyone who
// can read the file and guess it: a 4-digit secret on a command line fell
// to 10⁴ guesses. So the hash is HMAC-SHA256 under a key that only the
// user can read, cut to 64 bits.
//
// Where the key lives: not in the history file's header, which under the
// usual umask of 022 is as readable as the file (the key would help every
// reader guess), but in the user's state directory,
// $XDG_STATE_HOME/numasteal/history-key (default ~/.local/state), created
// 0600 in a directory created 0700, 32 random bytes as hex. The history
// then reveals nothing the user did not already show: task IDs (written
// in the workload and the build directory) and durations.
//
// The cost: a history is only matched by hash by the user who wrote it (or
// shares the key file); for anyone else, and for a history of version 1 or
// 2 written before keying, estimates match by task ID only, and the old
// entries age out (History.Retain). When the key cannot be read or made
// (no home directory, a read-only one), the run uses a random key and
// matches by ID only.

// historyKeyBytes is the length of a history key.
const historyKeyBytes = 32

// HistoryKey returns the user's history key, creating it on first use. See
// the comment above for where it lives.
func HistoryKey() ([]byte, error) {
	dir, err := historyKeyDir()
	if err != nil {
		return nil, fmt.Errorf("no key for command hashes: %w", err)
	}
	path := filepath.Join(dir, "history-key")
	key, err := readKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		key, err = makeKey(dir, path)
	}
	if err != nil {
		return nil, fmt.Errorf("no key for command hashes: %w", err)
	}
	return key, nil
}

// historyKeyDir returns $XDG_STATE_HOME/numasteal, or its default under
// $HOME.
func historyKeyDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "numasteal"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state", "numasteal"), nil
}

// readKey reads a key file, refusing one that others may read or that is
// not a regular file of the right size.
func readKey(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s: want a regular file of mode 0600, have %v", path, fi.Mode())
	}
	text, err := readLimited(f, path, 2*historyKeyBytes+1)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(string(trimNewline(text)))
	if err != nil || len(key) != historyKeyBytes {
		return nil, fmt.Errorf("%s: want %d hex digits", path, 2*historyKeyBytes)
	}
	return key, nil
}

func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		return b[:n-1]
	}
	return b
}

// makeKey creates a new key file at path (in dir), or reads the one a
// concurrent run created first.
func makeKey(dir, path string) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key := make([]byte, historyKeyBytes)
	rand.Read(key)
	tmp, err := createTemp(path, 0o600)
	if err != nil {
		return nil, err
	}
	_, err = tmp.WriteString(hex.EncodeToString(key) + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// link, not rename: of two runs making a key at once, the first
		// wins and the second reads it.
		err = os.Link(tmp.Name(), path)
	}
	os.Remove(tmp.Name())
	if errors.Is(err, fs.ErrExist) {
		return readKey(path)
	}
	if err != nil {
		return nil, err
	}
	return key, nil
}

// hash returns the keyed hash of t's command (its Cmd words or Shell text,
// with its working directory) as 16 hex digits: the first 64 bits of
// HMAC-SHA256 under h's key.
func (h *History) hash(t *Task) string {
	m := hmac.New(sha256.New, h.key)
	m.Write(t.appendCommand(nil))
	var sum [sha256.Size]byte
	return hex.EncodeToString(m.Sum(sum[:0])[:8])
}
