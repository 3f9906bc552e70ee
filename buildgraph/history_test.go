package buildgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestHistoryRoundTrip(t *testing.T) {
	a := &Task{ID: "a.o", Cmd: []string{"cc", "-c", "a.c"}}
	b := &Task{ID: "b.o", Shell: "cc -c b.c"}
	path := filepath.Join(t.TempDir(), "history")
	h, err := LoadHistory(path) // missing: empty, with the user's key
	if err != nil {
		t.Fatal(err)
	}
	for _, ms := range []int{100, 200, 300, 400, 500, 600, 700} {
		h.Record(a, time.Duration(ms)*time.Millisecond)
	}
	h.Record(b, 1500*time.Microsecond)                         // rounds to 2 ms
	h.RecordPeak(a, 300<<20+1)                                 // rounds up to 301 MiB
	h.RecordPeak(&Task{ID: "c.o", Cmd: []string{"cc"}}, 1<<20) // no duration: no entry
	if err := h.Save(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"numasteal_history":2,"runs":0}
{"id":"a.o","hash":"` + h.hash(a) + `","ms":[300,400,500,600,700],"mb":301}
{"id":"b.o","hash":"` + h.hash(b) + `","ms":[2]}
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
	if p, ok := h2.Peak(a); !ok || p != 301<<20 {
		t.Errorf("Peak(a) = %d, %v; want 301 MiB", p, ok)
	}
	if p, ok := h2.Peak(b); ok {
		t.Errorf("Peak(b) = %d, true; want none", p)
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
	// keep matches by ID and command, moved by command; gone matches
	// nothing and lives HistoryKeepRuns runs.
	g := &Graph{Tasks: []*Task{keep, {ID: "new id", Shell: "b"}}}
	for run := 1; run <= HistoryKeepRuns; run++ {
		h.Retain(g)
		want := 3
		if run == HistoryKeepRuns {
			want = 2
		}
		if h.Len() != want {
			t.Errorf("after run %d: Len = %d, want %d", run, h.Len(), want)
		}
	}
	if _, ok := h.Estimate(gone); ok {
		t.Error("gone still estimated")
	}
	if _, ok := h.Estimate(moved); !ok {
		t.Error("moved no longer estimated")
	}
}

// TestHistoryBoundedShifting simulates 20 runs of a command file to which
// a line is prepended before every run, so every ID names another command
// each time: the history must hold at most two entries per task,
// survive each save and load, and still estimate every command.
func TestHistoryBoundedShifting(t *testing.T) {
	const n, runs = 1000, 20
	path := filepath.Join(t.TempDir(), "history")
	for run := range runs {
		h, err := LoadHistory(path)
		if err != nil {
			t.Fatal(err)
		}
		g := &Graph{}
		for i := range n {
			// Line i+run holds the command that was line i+run-1 a run ago.
			g.Tasks = append(g.Tasks, &Task{ID: "line " + strconv.Itoa(i+run+1), Shell: "cmd " + strconv.Itoa(i)})
		}
		known := 0
		for _, tk := range g.Tasks {
			if _, ok := h.Estimate(tk); ok {
				known++
			}
			h.Record(tk, 10*time.Millisecond)
		}
		if run > 0 && known != n {
			t.Errorf("run %d: %d of %d commands estimated", run, known, n)
		}
		h.Retain(g)
		if limit := 2 * n; h.Len() > limit {
			t.Fatalf("run %d: %d entries, more than %d", run, h.Len(), limit)
		}
		if err := h.Save(path); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadHistoryVersion1 reads a file of version 1: its entries count as
// seen in run 0, so they live HistoryKeepRuns runs unless matched.
func TestReadHistoryVersion1(t *testing.T) {
	a := &Task{ID: "a.o", Shell: "cc a"}
	in := `{"numasteal_history":1}` + "\n" + `{"id":"a.o","hash":"` + a.CommandHash() + `","ms":[10,20]}` + "\n" +
		`{"id":"old","hash":"0000000000000000","ms":[5]}` + "\n"
	h, err := ReadHistory(strings.NewReader(in), "hist")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := h.Estimate(a); !ok || d != 15*time.Millisecond || h.Len() != 2 {
		t.Fatalf("Estimate = %v, %v; Len %d", d, ok, h.Len())
	}
	g := &Graph{Tasks: []*Task{a}}
	for range HistoryKeepRuns {
		h.Retain(g)
	}
	var buf bytes.Buffer
	h.WriteTo(&buf)
	want := fmt.Sprintf(`{"numasteal_history":2,"runs":%d}`+"\n"+`{"id":"a.o","hash":"`+a.CommandHash()+`","ms":[10,20],"seen":%[1]d}`+"\n", HistoryKeepRuns)
	if buf.String() != want {
		t.Errorf("file:\n%s\nwant\n%s", buf.String(), want)
	}
}

// TestHistoryLineForms checks that the fast line parser and encoding/json
// agree: every line appendHistEntry writes parses back to the same entry
// both ways, and lines in another form are left to encoding/json.
func TestHistoryLineForms(t *testing.T) {
	for _, e := range []histEntry{
		{ID: "a.o", Hash: "5c3f0e5f2b0a9d41", MS: []int64{1}},
		{ID: "line 12", Hash: "x", MS: []int64{0, 1, 2, 3, 999999999999}, Seen: 7},
		{ID: "big.o", Hash: "x", MS: []int64{5}, MB: 2048, Seen: 2},
		{ID: `q"uote\back`, Hash: "h", MS: []int64{3}, Seen: 1},
		{ID: "tab\tnew\nline é <&>", Hash: "h", MS: []int64{4}},
	} {
		line := appendHistEntry(nil, &e)
		var viaJSON histEntry
		if err := json.Unmarshal(line, &viaJSON); err != nil || !reflect.DeepEqual(viaJSON, e) {
			t.Errorf("%s: encoding/json reads %+v, %v; want %+v", line, viaJSON, err, e)
		}
		var fast histEntry
		if parseHistEntry(bytes.TrimSuffix(line, []byte("\n")), &fast) {
			if !reflect.DeepEqual(fast, e) {
				t.Errorf("%s: fast parser reads %+v, want %+v", line, fast, e)
			}
		} else if plainJSON(e.ID) && plainJSON(e.Hash) {
			t.Errorf("%s: fast parser refused a plain line", line)
		}
	}
	for _, line := range []string{
		`{"hash":"h","id":"a","ms":[1]}`, `{"id":"a","hash":"h","ms":[01]}`, `{"id":"a","hash":"h","ms":[-1]}`,
		`{"id":"a", "hash":"h","ms":[1]}`, `{"id":"a","hash":"h","ms":[1]} {}`, `{"id":"a","hash":"h","ms":[1,2,3,4,5,6]}`,
		`{"id":"a","hash":"h","ms":[]}`, `{"id":"a","hash":"h","ms":[1],"seen":1,"x":2}`, `{"id":"\u0061","hash":"h","ms":[1]}`,
		`{"id":"a","hash":"h","ms":[1],"seen":1,"mb":2}`, `{"id":"a","hash":"h","ms":[1],"mb":-2}`,
	} {
		var e histEntry
		if parseHistEntry([]byte(line), &e) {
			t.Errorf("fast parser took %s", line)
		}
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
		{"# ninja log v5\n", `hist:1: history: not a numasteal history file (want the header {"numasteal_history":1} or {"numasteal_history":2,"runs":N})`},
		{`{"numasteal_history":2,"runs":1}` + "\n" + `{"id":"a","hash":"1","ms":[1],"seen":2}`, `hist:2: history: "seen" must be 0 to the header's runs (1)`},
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
