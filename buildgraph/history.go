package buildgraph

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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

// HistoryKeepRuns is how many runs an entry of a History lives past its
// last match (see History.Retain): an entry survives one run that does not
// use it (a branch switched away from and back), and a command file whose
// lines shift every run keeps at most two entries per task, this run's and
// the last one's, which this run's estimates read.
const HistoryKeepRuns = 2

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
//	{"id":"a.o","hash":"5c3f0e5f2b0a9d41","ms":[812,790,805],"mb":212,"seen":12}
//
// with the task's ID, its [Task.CommandHash], up to HistoryRuns durations
// in milliseconds, oldest first, the peak memory of its last successful
// run in MiB (RecordPeak; no "mb" when none was recorded), and the last
// run in which the entry matched a task. Blank lines are skipped. A file of version 1 (header
// {"numasteal_history":1}, no "seen") reads as one of 0 runs.
type History struct {
	key     []byte // keys the command hashes (history_key.go); read-only
	keyErr  error  // why key is not the user's (ReadHistoryFile); read-only
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
	// MB is the peak memory of the last run whose peak was recorded, in
	// MiB rounded up; 0: none.
	MB int64 `json:"mb,omitempty"`
	// Seen is the last run (History.runs at its end) in which the entry
	// matched a task; 0 in a file of version 1.
	Seen int64 `json:"seen,omitempty"`
}

// NewHistory returns an empty History whose command hashes are keyed with
// a new random key.
func NewHistory() *History { return newHistory(nil) }

// newHistory returns an empty History keyed with key, or with a new random
// key when key is nil.
func newHistory(key []byte) *History {
	if key == nil {
		key = make([]byte, historyKeyBytes)
		rand.Read(key)
	}
	return &History{
		key:     key,
		entries: make(map[histKey]*histEntry),
		byHash:  make(map[string]*histEntry),
		byID:    make(map[string]*histEntry),
	}
}

// LoadHistory reads the history file at path for a run: ReadHistoryFile
// without its report of skipped lines. A missing, unreadable or partly
// corrupt history never stops a build: what can be read is used.
func LoadHistory(path string) (*History, error) {
	h, _, err := ReadHistoryFile(path)
	return h, err
}

// ReadHistoryFile reads the history file at path, keying its command
// hashes with the user's key (HistoryKey). A missing file is an empty
// History (the first run has none).
//
// What is wrong inside the file is returned as skipped, and the History
// holds the rest: an entry line that does not parse (or is longer than
// maxHistoryLine) is left out; a file that cannot be read leaves the
// History empty. The caller should report skipped (each an *Error naming
// file and line) and go on: the next Save writes a clean file. A key that
// cannot be had is not in skipped: the History is keyed with a random key
// (durations match by task ID only) and KeyErr says why.
//
// err is set, and h nil, only when path must not be replaced by Save: it
// is not a regular file (a named pipe, a device), it is larger than
// MaxHistoryBytes, or its first line is not a history header (a workload
// or a log named by mistake).
func ReadHistoryFile(path string) (h *History, skipped, err error) {
	key, kerr := HistoryKey()
	empty := func() *History {
		h := newHistory(key)
		h.keyErr = kerr
		return h
	}
	var probs []error
	f, err := openRegular(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return empty(), nil, nil
	case errors.Is(err, ErrNotRegular):
		return nil, nil, &Error{Msg: "history: " + err.Error(), Err: err}
	case err != nil:
		probs = append(probs, &Error{Msg: "history: " + err.Error() + " (ignored; it will be replaced)", Err: err})
		return empty(), errors.Join(probs...), nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > MaxHistoryBytes {
		return nil, nil, &Error{Msg: "history: " + tooLarge(path, fi.Size(), MaxHistoryBytes).Error(), Err: ErrTooLarge}
	}
	h, err = readHistory(io.LimitReader(f, MaxHistoryBytes+1), path, key)
	if h == nil {
		return nil, nil, err
	}
	h.keyErr = kerr
	if err != nil {
		probs = append(probs, err)
	}
	return h, errors.Join(probs...), nil
}

// KeyErr returns why the History's command hashes are not keyed with the
// user's key (HistoryKey's error when ReadHistoryFile read it), or nil.
// Such a History matches durations by task ID only, and what it would
// save is keyed with a key no later run has.
func (h *History) KeyErr() error { return h.keyErr }

// maxHistoryLine is the longest line ReadHistory reads: an entry is at
// most a few KiB, its ID being at most MaxIDBytes, but versions before
// the bound wrote any ID.
const maxHistoryLine = 1 << 20

// maxHistoryProblems bounds how many skipped lines ReadHistory reports.
const maxHistoryProblems = 5

// ReadHistory reads a history in the file format from r; name is used in
// error positions. The command hashes are keyed with a new random key, so
// only IDs match those of the file; LoadHistory keys with the user's key.
//
// Lines that are not valid entries are skipped: the returned History holds
// every valid entry, and the error names each bad line (up to five) as an
// *Error wrapping ErrSyntax, joined. The History is nil only when the
// first line is not a history header or r fails.
func ReadHistory(r io.Reader, name string) (*History, error) {
	return readHistory(r, name, nil)
}

func readHistory(r io.Reader, name string, key []byte) (*History, error) {
	h := newHistory(key)
	br := bufio.NewReaderSize(r, 64<<10)
	header := false
	var probs []error
	more := 0
	for line := 1; ; line++ {
		raw, long, err := readHistLine(br)
		if err != nil && err != io.EOF {
			return nil, &Error{Pos: Pos{File: name, Line: line}, Msg: "history: " + err.Error(), Err: err}
		}
		if len(raw) == 0 && err == io.EOF && !long {
			break
		}
		bad := func(format string, args ...any) error {
			return &Error{Pos: Pos{File: name, Line: line}, Msg: "history: " + fmt.Sprintf(format, args...), Err: ErrSyntax}
		}
		var prob error
		text := bytes.TrimSpace(raw)
		switch {
		case long && !header:
			return nil, bad("not a numasteal history file (want the header %s or %sN})", historyHeaderV1, historyHeaderV2)
		case long:
			prob = bad("line longer than %d bytes; skipped", maxHistoryLine)
		case len(text) == 0:
		case !header:
			runs, ok := parseHistoryHeader(text)
			if !ok {
				return nil, bad("not a numasteal history file (want the header %s or %sN})", historyHeaderV1, historyHeaderV2)
			}
			h.runs = runs
			header = true
		default:
			prob = h.readEntry(text, bad)
		}
		if prob != nil {
			if len(probs) < maxHistoryProblems {
				probs = append(probs, prob)
			} else {
				more++
			}
		}
		if err == io.EOF {
			break
		}
	}
	if more > 0 {
		probs = append(probs, fmt.Errorf("%s: history: and %d more bad lines, skipped", name, more))
	}
	if len(probs) == 1 {
		return h, probs[0]
	}
	return h, errors.Join(probs...)
}

// readHistLine returns the next line without its newline. long is set
// (and the line's bytes dropped) when it exceeds maxHistoryLine; the rest
// of it is consumed.
func readHistLine(br *bufio.Reader) (line []byte, long bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			if len(buf)+len(chunk) > maxHistoryLine+1 {
				long, buf = true, nil
			} else if buf == nil && err == nil {
				return bytes.TrimSuffix(chunk, []byte("\n")), false, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil:
			return bytes.TrimSuffix(buf, []byte("\n")), long, nil
		default:
			return buf, long, err
		}
	}
}

// readEntry adds the entry of one line, or returns why it cannot.
func (h *History) readEntry(text []byte, bad func(string, ...any) error) error {
	e := new(histEntry)
	if !parseHistEntry(text, e) {
		// Not in the form WriteTo writes: let encoding/json decide,
		// and name what is wrong.
		*e = histEntry{}
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(e); err != nil {
			return bad("%s", strings.TrimPrefix(err.Error(), "json: "))
		}
		if dec.More() {
			return bad("more than one object on the line")
		}
	}
	if e.ID == "" || e.Hash == "" {
		return bad(`entry lacks "id" or "hash"`)
	}
	if len(e.MS) == 0 || len(e.MS) > HistoryRuns || slices.Min(e.MS) < 0 {
		return bad(`"ms" must hold 1 to %d durations, none negative`, HistoryRuns)
	}
	if e.MB < 0 {
		return bad(`"mb" must not be negative`)
	}
	if e.Seen < 0 || e.Seen > h.runs {
		return bad(`"seen" must be 0 to the header's runs (%d)`, h.runs)
	}
	h.put(e)
	return nil
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
	e, ok := h.find(t)
	if !ok {
		return 0, false
	}
	var sum int64
	for _, ms := range e.MS {
		sum += ms
	}
	return time.Duration(sum/int64(len(e.MS))) * time.Millisecond, true
}

// find returns a copy of the entry t's estimates read.
func (h *History) find(t *Task) (e histEntry, ok bool) {
	if h == nil {
		return e, false
	}
	hash := h.hash(t)
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.lookupLocked(t.ID, hash); p != nil {
		// Record replaces MS rather than changing its elements in place
		// beyond its length, so the copy's slice stays as it was.
		return *p, true
	}
	return e, false
}

// Record adds a run of t that took d (rounded to milliseconds), dropping
// the oldest beyond HistoryRuns. Record only successful runs: a failure's
// duration says little about the next try.
func (h *History) Record(t *Task, d time.Duration) {
	hash := h.hash(t)
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

// RecordPeak sets the peak memory of t's last run, in bytes, kept in MiB
// rounded up. Call it after Record of the same run: a task with no
// recorded duration gets no peak.
func (h *History) RecordPeak(t *Task, peak int64) {
	if h == nil || peak <= 0 {
		return
	}
	hash := h.hash(t)
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.entries[histKey{t.ID, hash}]; e != nil {
		e.MB = (peak + 1<<20 - 1) >> 20
	}
}

// Peak returns the peak memory of t's last recorded run, in bytes, from
// the entry Estimate reads; ok is false when there is none.
func (h *History) Peak(t *Task) (peak int64, ok bool) {
	e, ok := h.find(t)
	if !ok || e.MB == 0 {
		return 0, false
	}
	return e.MB << 20, true
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
		hashes[i] = h.hash(t)
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

// Save writes the history to path with WriteFileAtomic: to a new
// temporary file in the same directory (O_EXCL|O_NOFOLLOW), then renamed
// over path, so a crash never leaves half a file and a link planted at
// path is replaced, never written through. The file is created 0666 less
// the umask, like ninja's .ninja_log: it holds task IDs, durations and
// keyed hashes that reveal nothing about the commands (HistoryKey), so it
// needs no more secrecy than the build directory; a umask of 077 makes it
// 0600. Save never widens the mode.
func (h *History) Save(path string) error {
	if err := writeAtomic(path, h); err != nil {
		return fmt.Errorf("buildgraph: saving history to %s: %w", path, err)
	}
	return nil
}
