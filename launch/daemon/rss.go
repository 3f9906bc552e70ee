package daemon

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// rssStore is the learned peak RSS of each output file: what the
// launcher measured (wait4's ru_maxrss, the command and every child it
// waited for) the last time a job wrote that file. The file format is one
// "KiB<TAB>path" line per output, path last so it may hold anything but a
// newline. Guarded by Server.mu.
type rssStore struct {
	kib   map[string]int64
	dirty bool
}

func newRSSStore() *rssStore { return &rssStore{kib: make(map[string]int64)} }

// loadRSS reads the store at path; a missing file is an empty store.
func loadRSS(path string) (*rssStore, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return newRSSStore(), nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := parseRSS(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// parseRSS parses the store's format.
func parseRSS(r io.Reader) (*rssStore, error) {
	s := newRSSStore()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		k, path, ok := strings.Cut(sc.Text(), "\t")
		v, err := strconv.ParseInt(k, 10, 64)
		if !ok || err != nil || v < 0 || path == "" {
			return nil, fmt.Errorf("line %d: want KiB<TAB>path", n)
		}
		s.kib[path] = v
	}
	return s, sc.Err()
}

// lookup returns the learned peak of out in bytes.
func (s *rssStore) lookup(out string) (int64, bool) {
	v, ok := s.kib[out]
	return v << 10, ok && out != ""
}

// record sets the peak of out to kib.
func (s *rssStore) record(out string, kib int64) {
	if out == "" || kib <= 0 || s.kib[out] == kib {
		return
	}
	s.kib[out] = kib
	s.dirty = true
}

// save writes the store to path through a temporary file and a rename.
func (s *rssStore) save(path string) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for p, v := range s.kib {
		if !strings.Contains(p, "\n") {
			fmt.Fprintf(w, "%d\t%s\n", v, p)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	s.dirty = false
	return os.Rename(tmp, path)
}
