package buildgraph

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestHistoryRoundTrip(t *testing.T) {
	a := &Task{ID: "a.o", Cmd: []string{"cc", "-c", "a.c"}}
	b := &Task{ID: "b.o", Shell: "cc -c b.c"}
	h := NewHistory()
	for _, ms := range []int{100, 200, 300, 400, 500, 600, 700} {
		h.Record(a, time.Duration(ms)*time.Millisecond)
	}
	h.Record(b, 1500*time.Microsecond) // rounds to 2 ms
	path := filepath.Join(t.TempDir(), "history")
	if err := h.Save(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"numasteal_history":1}
{"id":"a.o","hash":"` + a.CommandHash() + `","ms":[300,400,500,600,700]}
{"id":"b.o","hash":"` + b.CommandHash() + `","ms":[2]}
`
	if string(data) != want {
		t.Errorf("file:\n%s\nwant\n%s", data, want)
	}
	h2, err := LoadHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	// The last HistoryRuns runs, averaged.
	if d, ok := h2.Estimate(a); !ok || d != 500*time.Millisecond {
		t.Errorf("Estimate(a) = %v, %v; want 500ms", d, ok)
	}
	if d, ok := h2.Estimate(b); !ok || d != 2*time.Millisecond {
		t.Errorf("Estimate(b) = %v, %v; want 2ms", d, ok)
	}
	if h2.Len() != 2 {
		t.Errorf("Len = %d", h2.Len())
	}
	// Saving over an existing file replaces it.
	h2.Record(b, 4*time.Millisecond)
	if err := h2.Save(path); err != nil {
		t.Fatal(err)
	}
	h3, _ := LoadHistory(path)
	if d, _ := h3.Estimate(b); d != 3*time.Millisecond {
		t.Errorf("after resave Estimate(b) = %v", d)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestHistoryLookup(t *testing.T) {
	h := NewHistory()
	h.Record(&Task{ID: "line 3", Shell: "gzip a"}, 300*time.Millisecond)
	h.Record(&Task{ID: "x.o", Cmd: []string{"cc", "-O0", "x.c"}}, 100*time.Millisecond)
	for _, tt := range []struct {
		t    *Task
		want time.Duration
		ok   bool
	}{
		{&Task{ID: "line 3", Shell: "gzip a"}, 300 * time.Millisecond, true},
		{&Task{ID: "line 4", Shell: "gzip a"}, 300 * time.Millisecond, true},                // the line moved
		{&Task{ID: "x.o", Cmd: []string{"cc", "-O2", "x.c"}}, 100 * time.Millisecond, true}, // a flag changed
		{&Task{ID: "y.o", Cmd: []string{"cc", "-O2", "y.c"}}, 0, false},
	} {
		d, ok := h.Estimate(tt.t)
		if d != tt.want || ok != tt.ok {
			t.Errorf("Estimate(%s) = %v, %v; want %v, %v", tt.t.ID, d, ok, tt.want, tt.ok)
		}
	}
	var nilH *History
	if _, ok := nilH.Estimate(&Task{ID: "a", Shell: "x"}); ok || nilH.Len() != 0 {
		t.Error("nil History is not empty")
	}
}

func TestHistoryRetain(t *testing.T) {
	keep := &Task{ID: "keep", Shell: "a"}
	moved := &Task{ID: "old id", Shell: "b"}
	gone := &Task{ID: "gone", Shell: "c"}
	h := NewHistory()
	for _, tk := range []*Task{keep, moved, gone} {
		h.Record(tk, time.Second)
	}
	h.Retain(&Graph{Tasks: []*Task{keep, {ID: "new id", Shell: "b"}}})
	if h.Len() != 2 {
		t.Errorf("Len = %d, want 2", h.Len())
	}
	if _, ok := h.Estimate(gone); ok {
		t.Error("gone still estimated")
	}
}

func TestLoadHistoryMissing(t *testing.T) {
	h, err := LoadHistory(filepath.Join(t.TempDir(), "none"))
	if err != nil || h.Len() != 0 {
		t.Errorf("LoadHistory(missing) = %v entries, %v", h.Len(), err)
	}
}

func TestReadHistoryCorrupt(t *testing.T) {
	const hdr = `{"numasteal_history":1}` + "\n"
	for _, tt := range []struct{ in, err string }{
		{"# ninja log v5\n", `hist:1: history: not a numasteal history file (want the header {"numasteal_history":1})`},
		{hdr + `{"id":"a","hash":"1","ms":[1]}` + "\n\n" + `{"id":"a","hash":"1","ms":[1]` + "\n", `hist:4: history: unexpected EOF`},
		{hdr + `{"id":"a","hash":"1","ms":[1],"x":2}`, `hist:2: history: unknown field "x"`},
		{hdr + `{"id":"a","hash":"1","ms":["1"]}`, `hist:2: history: cannot unmarshal string into Go struct field histEntry.ms of type int64`},
		{hdr + `{"id":"","hash":"1","ms":[1]}`, `hist:2: history: entry lacks "id" or "hash"`},
		{hdr + `{"id":"a","hash":"1","ms":[]}`, `hist:2: history: "ms" must hold 1 to 5 durations, none negative`},
		{hdr + `{"id":"a","hash":"1","ms":[1,2,3,4,5,6]}`, `hist:2: history: "ms" must hold 1 to 5 durations, none negative`},
		{hdr + `{"id":"a","hash":"1","ms":[-1]}`, `hist:2: history: "ms" must hold 1 to 5 durations, none negative`},
		{hdr + `{"id":"a","hash":"1","ms":[1]} {}`, `hist:2: history: more than one object on the line`},
	} {
		_, err := ReadHistory(strings.NewReader(tt.in), "hist")
		if err == nil || err.Error() != tt.err {
			t.Errorf("ReadHistory(%q):\n got %v\nwant %s", tt.in, err, tt.err)
		}
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrSyntax) {
			t.Errorf("ReadHistory(%q): error %T is not a syntax *Error", tt.in, err)
		}
	}
}

func TestHistorySaveError(t *testing.T) {
	err := NewHistory().Save(filepath.Join(t.TempDir(), "no-dir", "history"))
	if err == nil || !strings.Contains(err.Error(), "saving history") {
		t.Errorf("Save into a missing directory = %v", err)
	}
}

func TestHistoryConcurrent(t *testing.T) {
	h := NewHistory()
	tasks := []*Task{{ID: "a", Shell: "a"}, {ID: "b", Shell: "b"}}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				tk := tasks[(w+i)%2]
				h.Record(tk, time.Duration(i)*time.Millisecond)
				h.Estimate(tk)
				if i%50 == 0 {
					h.WriteTo(&strings.Builder{})
				}
			}
		})
	}
	wg.Wait()
	if h.Len() != 2 {
		t.Errorf("Len = %d", h.Len())
	}
}
