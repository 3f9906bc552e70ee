package buildgraph

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// HistoryRuns is how many of a task's most recent durations a History keeps;
// its estimate is their mean, so one slow run (a cold cache) moves it only
// part of the way.
const HistoryRuns = 5

// historyHeader is the first line of a history file.
const historyHeader = `{"numasteal_history":1}`

// History holds the durations of earlier runs, to weight the critical path
// (like ninja's .ninja_log). It is safe for concurrent use; a nil *History
// is an empty one.
//
// The file is JSON lines: the header line {"numasteal_history":1}, then one
// object per task,
//
//	{"id":"a.o","hash":"5c3f0e5f2b0a9d41","ms":[812,790,805]}
//
// with the task's ID, its [Task.CommandHash] and up to HistoryRuns
// durations in milliseconds, oldest first. Blank lines are skipped.
type History struct {
	mu      sync.Mutex
	entries map[histKey]*histEntry
	byHash  map[string]*histEntry // the entry last recorded or read for a hash
	byID    map[string]*histEntry // the entry last recorded or read for an ID
}

type histKey struct{ id, hash string }

type histEntry struct {
	ID   string  `json:"id"`
	Hash string  `json:"hash"`
	MS   []int64 `json:"ms"`
}

// NewHistory returns an empty History.
func NewHistory() *History {
	return &History{
		entries: make(map[histKey]*histEntry),
		byHash:  make(map[string]*histEntry),
		byID:    make(map[string]*histEntry),
	}
}

// LoadHistory reads the history file at path. A missing file is an empty
// History, not an error (the first run has none); a corrupt one is an
// *Error naming the file and line.
func LoadHistory(path string) (*History, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return NewHistory(), nil
	}
	if err != nil {
		return nil, &Error{Msg: err.Error(), Err: err}
	}
	defer f.Close()
	return ReadHistory(f, path)
}

// ReadHistory reads a history in the file format from r; name is used in
// error positions.
func ReadHistory(r io.Reader, name string) (*History, error) {
	h := NewHistory()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	header := false
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		bad := func(format string, args ...any) error {
			return &Error{Pos: Pos{File: name, Line: line}, Msg: "history: " + fmt.Sprintf(format, args...), Err: ErrSyntax}
		}
		if !header {
			if string(text) != historyHeader {
				return nil, bad("not a numasteal history file (want the header %s)", historyHeader)
			}
			header = true
			continue
		}
		var e histEntry
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, bad("%s", strings.TrimPrefix(err.Error(), "json: "))
		}
		if dec.More() {
			return nil, bad("more than one object on the line")
		}
		if e.ID == "" || e.Hash == "" {
			return nil, bad(`entry lacks "id" or "hash"`)
		}
		if len(e.MS) == 0 || len(e.MS) > HistoryRuns || slices.Min(e.MS) < 0 {
			return nil, bad(`"ms" must hold 1 to %d durations, none negative`, HistoryRuns)
		}
		h.put(&e)
	}
	if err := sc.Err(); err != nil {
		return nil, &Error{Pos: Pos{File: name}, Msg: "history: " + err.Error(), Err: err}
	}
	return h, nil
}

func (h *History) put(e *histEntry) {
	h.entries[histKey{e.ID, e.Hash}] = e
	h.byHash[e.Hash] = e
	h.byID[e.ID] = e
}

// Estimate returns the expected duration of t: the mean of the recorded
// runs of the same ID and command; failing that, of the same command under
// another ID (a line that moved in a command file); failing that, of the
// same ID with another command (a flag changed). ok is false when nothing
// matches.
func (h *History) Estimate(t *Task) (d time.Duration, ok bool) {
	if h == nil {
		return 0, false
	}
	hash := t.CommandHash()
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entries[histKey{t.ID, hash}]
	if e == nil {
		e = h.byHash[hash]
	}
	if e == nil {
		e = h.byID[t.ID]
	}
	if e == nil {
		return 0, false
	}
	var sum int64
	for _, ms := range e.MS {
		sum += ms
	}
	return time.Duration(sum/int64(len(e.MS))) * time.Millisecond, true
}

// Record adds a run of t that took d (rounded to milliseconds), dropping
// the oldest beyond HistoryRuns. Record only successful runs: a failure's
// duration says little about the next try.
func (h *History) Record(t *Task, d time.Duration) {
	hash := t.CommandHash()
	ms := max(d.Round(time.Millisecond).Milliseconds(), 0)
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.entries[histKey{t.ID, hash}]
	if e == nil {
		e = &histEntry{ID: t.ID, Hash: hash}
	}
	e.MS = append(e.MS, ms)
	if n := len(e.MS); n > HistoryRuns {
		e.MS = slices.Clone(e.MS[n-HistoryRuns:])
	}
	h.put(e)
}

// Len returns the number of entries.
func (h *History) Len() int {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.entries)
}

// Retain drops the entries that match no task of g by ID or by command,
// so that a history file does not grow forever as a project changes.
func (h *History) Retain(g *Graph) {
	ids := make(map[string]bool, len(g.Tasks))
	hashes := make(map[string]bool, len(g.Tasks))
	for _, t := range g.Tasks {
		ids[t.ID] = true
		hashes[t.CommandHash()] = true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, e := range h.entries {
		if !ids[k.id] && !hashes[k.hash] {
			delete(h.entries, k)
			if h.byHash[k.hash] == e {
				delete(h.byHash, k.hash)
			}
			if h.byID[k.id] == e {
				delete(h.byID, k.id)
			}
		}
	}
}

// WriteTo writes the history in the file format, entries sorted by ID and
// hash so that the file diffs well.
func (h *History) WriteTo(w io.Writer) (int64, error) {
	var buf bytes.Buffer
	buf.WriteString(historyHeader + "\n")
	if h != nil {
		h.mu.Lock()
		es := make([]*histEntry, 0, len(h.entries))
		for _, e := range h.entries {
			es = append(es, e)
		}
		slices.SortFunc(es, func(a, b *histEntry) int {
			if c := strings.Compare(a.ID, b.ID); c != 0 {
				return c
			}
			return strings.Compare(a.Hash, b.Hash)
		})
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		for _, e := range es {
			if err := enc.Encode(e); err != nil { // cannot fail for strings and ints
				h.mu.Unlock()
				return 0, err
			}
		}
		h.mu.Unlock()
	}
	return buf.WriteTo(w)
}

// Save writes the history to path atomically: to a temporary file in the
// same directory, then renamed over path, so a crash never leaves half a
// file.
func (h *History) Save(path string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("buildgraph: saving history: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("buildgraph: saving history to %s: %w", path, err)
		}
	}()
	if err = tmp.Chmod(0o644); err != nil {
		return err
	}
	if _, err = h.WriteTo(tmp); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
