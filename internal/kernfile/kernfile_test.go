package kernfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	want := bytes.Repeat([]byte("0123456789"), 300) // longer than any buffer given
	if err := os.WriteFile(name, want, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, buf := range [][]byte{nil, make([]byte, 0, 8), make([]byte, 0, 8192)} {
		got, err := Read(name, buf)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Read with a buffer of %d: %d bytes, want %d", cap(buf), len(got), len(want))
		}
	}
	if _, err := Read(filepath.Join(dir, "missing"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of a missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, []byte("old value"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(name, []byte("new")); err != nil {
		t.Fatal(err)
	}
	// Like a kernel file, the value is written at the start, in place.
	if got, _ := os.ReadFile(name); string(got) != "new value" {
		t.Errorf("after Write: %q, want %q", got, "new value")
	}
	if err := Write(filepath.Join(dir, "missing"), []byte("x")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Write of a missing file: %v, want fs.ErrNotExist", err)
	}
}
