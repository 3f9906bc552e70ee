package buildgraph

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A history line longer than any valid one (an ID of 1 MiB, which older
// versions accepted and wrote) is skipped with an error naming it; the
// entries around it are kept and the next Save drops it.
func TestReadHistoryLongLine(t *testing.T) {
	long := `{"id":"` + strings.Repeat("x", maxHistoryLine) + `","hash":"1","ms":[1]}`
	in := `{"numasteal_history":2,"runs":1}` + "\n" + `{"id":"a","hash":"1","ms":[7]}` + "\n" + long + "\n" + `{"id":"b","hash":"2","ms":[9]}` + "\n"
	h, err := ReadHistory(strings.NewReader(in), "hist")
	if err == nil || err.Error() != "hist:3: history: line longer than 1048576 bytes; skipped" || !errors.Is(err, ErrSyntax) {
		t.Errorf("error %v", err)
	}
	if h == nil || h.Len() != 2 {
		t.Fatalf("history %v, want the 2 good entries", h)
	}
	if d, ok := h.Estimate(&Task{ID: "b", Shell: "x"}); !ok || d != 9*time.Millisecond {
		t.Errorf("Estimate(b) = %v, %v", d, ok)
	}
}

// Bad lines are skipped and reported (at most five, then a count), never
// failing the read: a corrupt history must not block every later run.
func TestReadHistorySkipsBadLines(t *testing.T) {
	var in strings.Builder
	in.WriteString(`{"numasteal_history":2,"runs":0}` + "\n")
	for range 8 {
		in.WriteString("garbage\n")
	}
	in.WriteString(`{"id":"a","hash":"1","ms":[7]}` + "\n")
	h, err := ReadHistory(strings.NewReader(in.String()), "hist")
	if h == nil || h.Len() != 1 {
		t.Fatalf("history %v", h)
	}
	want := "hist:2: history: invalid character 'g' looking for beginning of value\n" +
		"hist:3: history: invalid character 'g' looking for beginning of value\n" +
		"hist:4: history: invalid character 'g' looking for beginning of value\n" +
		"hist:5: history: invalid character 'g' looking for beginning of value\n" +
		"hist:6: history: invalid character 'g' looking for beginning of value\n" +
		"hist: history: and 3 more bad lines, skipped"
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant\n%s", err, want)
	}
}

// ReadHistoryFile: what makes the file unusable as a history to replace
// is an error; what is wrong inside is reported and skipped.
func TestReadHistoryFile(t *testing.T) {
	dir := t.TempDir()
	fifo := mkfifo(t, dir, "fifo")
	notHist := filepath.Join(dir, "build.json")
	os.WriteFile(notHist, []byte(`{"tasks": []}`), 0o644)
	corrupt := filepath.Join(dir, "corrupt")
	os.WriteFile(corrupt, []byte(`{"numasteal_history":2,"runs":0}`+"\nxx\n"+`{"id":"a","hash":"1","ms":[7]}`+"\n"), 0o644)
	unreadable := filepath.Join(dir, "unreadable")
	os.WriteFile(unreadable, []byte(`{"numasteal_history":2,"runs":0}`+"\n"), 0o200)
	tests := []struct {
		path         string
		err, skipped string
		n            int
	}{
		{fifo, "history: read " + fifo + ": not a regular file (a named pipe); numasteal reads only regular files", "", 0},
		{notHist, notHist + `:1: history: not a numasteal history file (want the header {"numasteal_history":1} or {"numasteal_history":2,"runs":N})`, "", 0},
		{corrupt, "", corrupt + ":2: history: invalid character 'x' looking for beginning of value", 1},
		{filepath.Join(dir, "none"), "", "", 0},
	}
	if os.Geteuid() != 0 {
		tests = append(tests, struct {
			path         string
			err, skipped string
			n            int
		}{unreadable, "", "history: open " + unreadable + ": permission denied (ignored; it will be replaced)", 0})
	}
	for _, tt := range tests {
		within(t, 5*time.Second, func() {
			h, skipped, err := ReadHistoryFile(tt.path)
			if got := errText(err); got != tt.err {
				t.Errorf("%s: error %q, want %q", tt.path, got, tt.err)
			}
			if got := errText(skipped); got != tt.skipped {
				t.Errorf("%s: skipped %q, want %q", tt.path, got, tt.skipped)
			}
			if tt.err == "" && (h == nil || h.Len() != tt.n) {
				t.Errorf("%s: history %v, want %d entries", tt.path, h, tt.n)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Save replaces a link planted at the history path (or the trace path)
// and leaves the file it points to untouched.
func TestSaveReplacesPlantedLink(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(outside, []byte("root's file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, save := range []struct {
		name string
		save func(path string) error
	}{
		{"history", NewHistory().Save},
		{"trace", NewTraceWriter(time.Now(), "test").Save},
	} {
		link := filepath.Join(dir, save.name)
		if err := os.Symlink(outside, link); err != nil {
			t.Fatal(err)
		}
		if err := save.save(link); err != nil {
			t.Fatalf("%s: %v", save.name, err)
		}
		if b, _ := os.ReadFile(outside); string(b) != "root's file\n" {
			t.Errorf("%s: the link's target now holds %q", save.name, b)
		}
		fi, err := os.Lstat(link)
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v, %v; want a regular file in place of the link", save.name, fi, err)
		}
	}
}

// The history is created 0666 less the umask: 0600 under umask 077, and
// never chmod-ed wider.
func TestSaveHistoryUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "hist")
	if err := NewHistory().Save(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600 under umask 077", fi.Mode(), err)
	}
	syscall.Umask(0o022)
	if err := NewHistory().Save(path); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v; want 0644 under umask 022", fi.Mode())
	}
}

// A temporary file left by a killed run (its pid gone) is removed by the
// next save; one of a live process, or of another name, stays.
func TestSaveRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".numasteal_history")
	dead := path + ".tmp.999999999.abcdef" // above pid_max
	live := path + ".tmp.1.abcdef"         // init
	other := filepath.Join(dir, "notes.tmp.999999999.x")
	for _, p := range []string{dead, live, other} {
		os.WriteFile(p, nil, 0o600)
	}
	if err := NewHistory().Save(path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file kept: %v", err)
	}
	for _, p := range []string{live, other, path} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// The command hash is keyed: it is not the unkeyed FNV hash, it is the
// same under the same key file, and the key file is 0600.
func TestHistoryHashKeyed(t *testing.T) {
	tk := &Task{ID: "a", Shell: "mysql -p1234"}
	h1, _ := LoadHistory(filepath.Join(t.TempDir(), "x"))
	h2, _ := LoadHistory(filepath.Join(t.TempDir(), "y"))
	if h1.hash(tk) != h2.hash(tk) || h1.hash(tk) == tk.CommandHash() || len(h1.hash(tk)) != 16 {
		t.Errorf("hashes %s, %s; unkeyed %s", h1.hash(tk), h2.hash(tk), tk.CommandHash())
	}
	if NewHistory().hash(tk) == h1.hash(tk) {
		t.Errorf("a random key gives the user's hash")
	}
	fi, err := os.Stat(filepath.Join(os.Getenv("XDG_STATE_HOME"), "numasteal", "history-key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file %v, %v", fi, err)
	}
}

// FuzzReadHistory: any input reads without panic; a History comes back
// unless the header is bad, and what it holds writes back to a file that
// reads again without error to the same bytes.
func FuzzReadHistory(f *testing.F) {
	f.Add([]byte(`{"numasteal_history":2,"runs":3}` + "\n" + `{"id":"a.o","hash":"5c3f","ms":[1,2],"seen":3}` + "\n"))
	f.Add([]byte(`{"numasteal_history":1}` + "\n" + `{"id": "a", "hash": "1", "ms": [1]}` + "\n\n"))
	f.Add([]byte(`{"numasteal_history":2,"runs":1}` + "\n" + `{"id":"a\u0000","hash":"1","ms":[1],"seen":2}`))
	f.Add([]byte("# ninja log v5\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ReadHistory(bytes.NewReader(data), "fuzz")
		if h == nil {
			if err == nil {
				t.Fatal("nil History without an error")
			}
			return
		}
		var buf bytes.Buffer
		h.WriteTo(&buf)
		h2, err := ReadHistory(bytes.NewReader(buf.Bytes()), "again")
		if err != nil {
			t.Fatalf("rewritten history fails: %v\n%s", err, buf.Bytes())
		}
		var buf2 bytes.Buffer
		h2.WriteTo(&buf2)
		if !bytes.Equal(buf.Bytes(), buf2.Bytes()) {
			t.Fatalf("round trip differs:\n%s\n%s", buf.Bytes(), buf2.Bytes())
		}
	})
}
