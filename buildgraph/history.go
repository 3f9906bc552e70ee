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
	"strconv"
	"strings"
	"sync"
	"time"
)

// HistoryRuns is how many of a task's most recent durations a History keeps;
// its estimate is their mean, so one slow run (a cold cache) moves it only
// part of the way.
const HistoryRuns = 5

// HistoryKeepRuns is how many runs an entry of a History survives without
// matching a task (see History.Retain): a guess, long enough for a branch
// switched away from and back, short enough that a command file whose
// lines shift every run keeps at most about that many entries per task.
const HistoryKeepRuns = 3

// historyHeaderV1 is the first line of a history file of version 1 (no
// run counts), which is still read; historyHeaderV2 begins that of the
// version written now, followed by the number of runs and "}".
const (
	historyHeaderV1 = `{"numasteal_history":1}`
	historyHeaderV2 = `{"numasteal_history":2,"runs":`
)

// History holds the durations of earlier runs, to weight the critical path
// (like ninja's .ninja_log). It is safe for concurrent use; a nil *History
// is an empty one.
//
// The file is JSON lines: the header line {"numasteal_history":2,"runs":R}
// with R the number of runs it has seen (see Retain), then one object per
// task,
//
//	{"id":"a.o","hash":"5c3f0e5f2b0a9d41","ms":[812,790,805],"seen":12}
//
// with the task's ID, its [Task.CommandHash], up to HistoryRuns durations
// in milliseconds, oldest first, and the last run in which the entry
// matched a task. Blank lines are skipped. A file of version 1 (header
// {"numasteal_history":1}, no "seen") reads as one of 0 runs.
type History struct {
	mu      sync.Mutex
	runs    int64 // runs ended by Retain, counted in the file
	entries map[histKey]*histEntry
	byHash  map[string]*histEntry // per hash, the entry seen last (then recorded or read last)
	byID    map[string]*histEntry // per ID, likewise
}

type histKey struct{ id, hash string }

type histEntry struct {
	ID   string  `json:"id"`
	Hash string  `json:"hash"`
	MS   []int64 `json:"ms"`
	// Seen is the last run (History.runs at its end) in which the entry
	// matched a task; 0 in a file of version 1.
	Seen int64 `json:"seen,omitempty"`
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
			runs, ok := parseHistoryHeader(text)
			if !ok {
				return nil, bad("not a numasteal history file (want the header %s or %sN})", historyHeaderV1, historyHeaderV2)
			}
			h.runs = runs
			header = true
			continue
		}
		e := new(histEntry)
		if !parseHistEntry(text, e) {
			// Not in the form WriteTo writes: let encoding/json decide,
			// and name what is wrong.
			*e = histEntry{}
			dec := json.NewDecoder(bytes.NewReader(text))
			dec.DisallowUnknownFields()
			if err := dec.Decode(e); err != nil {
				return nil, bad("%s", strings.TrimPrefix(err.Error(), "json: "))
			}
			if dec.More() {
				return nil, bad("more than one object on the line")
			}
		}
		if e.ID == "" || e.Hash == "" {
			return nil, bad(`entry lacks "id" or "hash"`)
		}
		if len(e.MS) == 0 || len(e.MS) > HistoryRuns || slices.Min(e.MS) < 0 {
			return nil, bad(`"ms" must hold 1 to %d durations, none negative`, HistoryRuns)
		}
		if e.Seen < 0 || e.Seen > h.runs {
			return nil, bad(`"seen" must be 0 to the header's runs (%d)`, h.runs)
		}
		h.put(e)
	}
	if err := sc.Err(); err != nil {
		return nil, &Error{Pos: Pos{File: name}, Msg: "history: " + err.Error(), Err: err}
	}
	return h, nil
}

// put adds or replaces e. It becomes the entry for its hash and its ID
// unless the one there was seen in a later run.
func (h *History) put(e *histEntry) {
	h.entries[histKey{e.ID, e.Hash}] = e
	if o := h.byHash[e.Hash]; o == nil || o.Seen <= e.Seen {
		h.byHash[e.Hash] = e
	}
	if o := h.byID[e.ID]; o == nil || o.Seen <= e.Seen {
		h.byID[e.ID] = e
	}
}

// lookupLocked returns the entry an estimate of the task (id, hash) reads:
// the same ID and command, else the same command, else the same ID; nil
// when none. h.mu must be held.
func (h *History) lookupLocked(id, hash string) *histEntry {
	e := h.entries[histKey{id, hash}]
	if e == nil {
		e = h.byHash[hash]
	}
	if e == nil {
		e = h.byID[id]
	}
	return e
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
	e := h.lookupLocked(t.ID, hash)
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
		e = &histEntry{ID: t.ID, Hash: hash, Seen: h.runs}
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

// Retain ends a run of g, so that a history stays bounded however its
// project changes. Call it once per run, after the last Record.
//
// The rule: the run gets the next number; each task of g marks as seen in
// it the entry its estimate reads (the same ID and command, else the same
// command, else the same ID: [History.Estimate]); then every entry not seen
// in this run or the HistoryKeepRuns-1 before it is dropped. So an entry
// lives HistoryKeepRuns runs past its last match, and a history holds at
// most about HistoryKeepRuns entries per task of the recent graphs, even
// for a command file whose IDs shift every run (each run records entries
// under new IDs, and the old ones match nothing).
func (h *History) Retain(g *Graph) {
	hashes := make([]string, len(g.Tasks))
	for i, t := range g.Tasks {
		hashes[i] = t.CommandHash()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.runs++
	for i, t := range g.Tasks {
		if e := h.lookupLocked(t.ID, hashes[i]); e != nil {
			e.Seen = h.runs
		}
	}
	for k, e := range h.entries {
		if h.runs-e.Seen < HistoryKeepRuns {
			continue
		}
		delete(h.entries, k)
		if h.byHash[k.hash] == e {
			delete(h.byHash, k.hash)
		}
		if h.byID[k.id] == e {
			delete(h.byID, k.id)
		}
	}
	// An ID or hash whose entry went may still have another.
	for k, e := range h.entries {
		if h.byHash[k.hash] == nil || h.byHash[k.hash].Seen < e.Seen {
			h.byHash[k.hash] = e
		}
		if h.byID[k.id] == nil || h.byID[k.id].Seen < e.Seen {
			h.byID[k.id] = e
		}
	}
}

// WriteTo writes the history in the file format, entries sorted by ID and
// hash so that the file diffs well.
func (h *History) WriteTo(w io.Writer) (int64, error) {
	var buf []byte
	if h == nil {
		buf = strconv.AppendInt([]byte(historyHeaderV2), 0, 10)
		buf = append(buf, "}\n"...)
	} else {
		h.mu.Lock()
		buf = strconv.AppendInt([]byte(historyHeaderV2), h.runs, 10)
		buf = append(buf, "}\n"...)
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
		for _, e := range es {
			buf = appendHistEntry(buf, e)
		}
		h.mu.Unlock()
	}
	n, err := w.Write(buf)
	return int64(n), err
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
