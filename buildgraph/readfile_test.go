package buildgraph

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test if it does not return within d: the
// bug was a hang, and a hung test would only time out after ten minutes.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still blocked after %v", d)
	}
}

// mkfifo makes a named pipe in dir. The test that makes it must open its
// writing end at the end, so a reader wrongly blocked in open returns.
func mkfifo(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() {
		// Unblock a reader stuck in open(2), if the code under test is
		// broken, so the goroutine ends.
		if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	return p
}

func TestReadInputRefuses(t *testing.T) {
	dir := t.TempDir()
	fifo := mkfifo(t, dir, "w.fifo")
	sparse := filepath.Join(dir, "sparse.json")
	if err := os.WriteFile(sparse, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(sparse, 2<<30); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want string
		kind error
	}{
		{fifo, "read " + fifo + ": not a regular file (a named pipe); numasteal reads only regular files", ErrNotRegular},
		{"/dev/zero", "read /dev/zero: not a regular file (a character device); numasteal reads only regular files", ErrNotRegular},
		{dir, "read " + dir + ": not a regular file (a directory); numasteal reads only regular files", ErrNotRegular},
		{sparse, "read " + sparse + ": file too large: 2048 MiB, more than the limit of 256 MiB", ErrTooLarge},
		{filepath.Join(dir, "none"), "open " + filepath.Join(dir, "none") + ": no such file or directory", fs.ErrNotExist},
	}
	for _, tt := range tests {
		if _, err := os.Stat(tt.path); tt.kind != fs.ErrNotExist && err != nil {
			t.Logf("%s: %v; skipped", tt.path, err)
			continue
		}
		within(t, 5*time.Second, func() {
			start := time.Now()
			_, err := ReadInput(tt.path, MaxWorkloadBytes)
			if err == nil || err.Error() != tt.want || !errors.Is(err, tt.kind) {
				t.Errorf("ReadInput(%s) = %v, want %q", tt.path, err, tt.want)
			}
			// And through LoadFile, as an *Error.
			_, err = LoadFile(tt.path)
			var e *Error
			if !errors.As(err, &e) || err.Error() != tt.want || !errors.Is(err, tt.kind) {
				t.Errorf("LoadFile(%s) = %v, want *Error %q", tt.path, err, tt.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("%s: took %v", tt.path, d)
			}
		})
	}
}

func TestReadInputLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadInput(p, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("at the limit: %q, %v", b, err)
	}
	if _, err := ReadInput(p, 9); !errors.Is(err, ErrTooLarge) || err.Error() != "read "+p+": file too large: 10 bytes, more than the limit of 9 bytes" {
		t.Errorf("over the limit: %v", err)
	}
}

// FuzzLoadFile loads arbitrary bytes from a file, as numasteal run does:
// no panic, every failure an *Error, and every accepted task's ID
// printable text within MaxIDBytes and its command within the bounds.
func FuzzLoadFile(f *testing.F) {
	f.Add([]byte("echo a\n# c\n\techo b\r\n"), ".txt")
	f.Add([]byte(`{"tasks": [{"id": "a", "shell": "x"}]}`), ".json")
	f.Add([]byte(`[{"directory": "/", "file": "a.c", "command": "cc a.c"}]`), ".json")
	f.Add([]byte("echo \xff\x00\n"), "")
	f.Fuzz(func(t *testing.T, data []byte, ext string) {
		if len(ext) > 8 || strings.ContainsAny(ext, "/\x00") {
			return
		}
		p := filepath.Join(t.TempDir(), "w"+ext)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return
		}
		g, err := LoadFile(p)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %q is not an *Error", err, err)
			}
			return
		}
		for _, tk := range g.Tasks {
			if why := badText(tk.ID, MaxIDBytes); why != "" {
				t.Fatalf("accepted id %q: %s", tk.ID, why)
			}
			if why := badCommand(tk); why != "" {
				t.Fatalf("accepted task %q: %s", tk.ID, why)
			}
		}
	})
}
