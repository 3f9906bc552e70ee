package buildgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to every loader: none may panic, every
// failure must be an *Error, and every success must be a valid graph that
// a Scheduler can run to the end.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*")
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			f.Add(data)
		}
	}
	for _, tt := range parseErrTests {
		f.Add([]byte(tt.in))
	}
	f.Add([]byte(`{"tasks": [{"id": "a", "cmd": ["x"], "deps": ["b"]}, {"id": "b", "shell": "y", "pool": "p", "cpus": 2}], "pools": {"p": 1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range []Format{FormatAuto, FormatGraph, FormatCompDB, FormatCommands} {
			g, err := Parse("fuzz", data, format)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || err.Error() == "" {
					t.Fatalf("%v: error %T %q is not an *Error", format, err, err)
				}
				continue
			}
			if err := g.Validate(); err != nil {
				t.Fatalf("%v: loaded graph fails Validate: %v", format, err)
			}
			s, err := NewScheduler(g, Limits{}, nil)
			if err != nil {
				t.Fatalf("%v: NewScheduler: %v", format, err)
			}
			for {
				tk, ok := s.Next()
				if !ok {
					break
				}
				s.Done(tk, len(tk.ID)%2 == 0)
			}
			if !s.Finished() {
				t.Fatalf("%v: schedule did not finish: %+v", format, s.Progress())
			}
		}
	})
}

// FuzzSplitWords checks that SplitWords never panics and that what it
// splits, QuoteWords joins back into a line that splits the same way.
func FuzzSplitWords(f *testing.F) {
	for _, tt := range splitTests {
		f.Add(tt.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := SplitWords(s)
		if err != nil {
			var se *SplitError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > len(s) {
				t.Fatalf("SplitWords(%q): bad error %#v", s, err)
			}
			return
		}
		line := QuoteWords(words)
		again, err := SplitWords(line)
		if err != nil || !reflect.DeepEqual(again, words) {
			t.Fatalf("SplitWords(%q) = %q; QuoteWords = %q; splits to %q, %v", s, words, line, again, err)
		}
	})
}

// FuzzQuoteWords checks QuoteWords on arbitrary words (NUL-separated).
func FuzzQuoteWords(f *testing.F) {
	f.Add("cc\x00-c\x00a b.c")
	f.Add("it's\x00\x00$HOME")
	f.Fuzz(func(t *testing.T, s string) {
		words := strings.Split(s, "\x00")
		line := QuoteWords(words)
		got, err := SplitWords(line)
		if err != nil || !reflect.DeepEqual(got, words) {
			t.Fatalf("QuoteWords(%q) = %q; splits to %q, %v", words, line, got, err)
		}
	})
}

// FuzzParseGraphReference compares the JSON build-graph loader with
// encoding/json: input that is not valid JSON must fail as a syntax error,
// and whatever the loader accepts, encoding/json (strict about unknown
// fields) must decode to the same tasks.
func FuzzParseGraphReference(f *testing.F) {
	for _, name := range []string{"graph_ok.json", "graph_unknown_field.json", "graph_syntax.json"} {
		if data, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"tasks": [{"id": "a\u00e9\n", "shell": "x \"y\"", "env": {"K": "v\\w"}, "deps": null, "remote": true}], "pools": {}}`))
	f.Add([]byte("{\"tasks\": [{\"id\": \"\xff\", \"cmd\": [\"a\"]}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse("fuzz", data, FormatGraph)
		if !json.Valid(bytes.TrimPrefix(data, utf8BOM)) {
			if err == nil || !errors.Is(err, ErrSyntax) {
				t.Fatalf("invalid JSON gave %v", err)
			}
			return
		}
		if err != nil {
			return
		}
		var ref struct {
			Tasks []struct {
				ID     string            `json:"id"`
				Cmd    []string          `json:"cmd"`
				Shell  string            `json:"shell"`
				Deps   []string          `json:"deps"`
				CPUs   int               `json:"cpus"`
				MemMB  int               `json:"mem_mb"`
				Pool   string            `json:"pool"`
				Cwd    string            `json:"cwd"`
				Env    map[string]string `json:"env"`
				Remote bool              `json:"remote"`
			} `json:"tasks"`
			Pools map[string]int `json:"pools"`
		}
		dec := json.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, utf8BOM)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ref); err != nil {
			t.Fatalf("loader accepted what encoding/json rejects: %v", err)
		}
		if len(ref.Tasks) != len(g.Tasks) {
			t.Fatalf("%d tasks, encoding/json %d", len(g.Tasks), len(ref.Tasks))
		}
		for i, r := range ref.Tasks {
			got := g.Tasks[i]
			want := &Task{ID: r.ID, Cmd: r.Cmd, Shell: r.Shell, Deps: r.Deps, CPUs: max(r.CPUs, 1), MemMB: r.MemMB,
				Pool: r.Pool, Cwd: r.Cwd, Env: r.Env, Remote: r.Remote, Pos: got.Pos}
			if len(want.Deps) == 0 && len(got.Deps) == 0 {
				want.Deps = got.Deps
			}
			if len(want.Env) == 0 && len(got.Env) == 0 {
				want.Env = got.Env
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("task %d:\n got %+v\nwant %+v", i, *got, *want)
			}
		}
		if len(ref.Pools) != len(g.Pools) {
			t.Fatalf("pools %v, encoding/json %v", g.Pools, ref.Pools)
		}
		for k, v := range ref.Pools {
			if g.Pools[k] != v {
				t.Fatalf("pools %v, encoding/json %v", g.Pools, ref.Pools)
			}
		}
	})
}
