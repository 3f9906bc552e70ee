package corpus

import (
	"archive/tar"
	"compress/bzip2"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/internal/testenv"
)

// Dir returns the corpus folder, skipping the test with a message when the
// shared folder is absent.
func Dir(t testing.TB) string {
	t.Helper()
	return filepath.Join(testenv.RequireShared(t), "testdata", "topologies")
}

// Names lists the machines of the corpus (the folders that hold an
// expected.json), sorted; nil when the shared folder is absent. A test that
// loops over Names must first call Dir or testenv.RequireShared so that a
// missing corpus skips the test instead of passing it with no machine.
func Names() []string {
	shared, err := testenv.SharedDir()
	if err != nil {
		return nil
	}
	dir := filepath.Join(shared, "testdata", "topologies")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "expected.json")); err == nil {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

// Extract returns the root of machine name (the directory holding its sys/
// and proc/, expected.json's sysfs_root inside the archive), extracting the
// archive on first use. It skips the test when the shared folder is absent
// and fails it when the machine is unknown or the archive is corrupt.
func Extract(t testing.TB, name string) string {
	t.Helper()
	exp := Load(t, name)
	archive := filepath.Join(Dir(t), name, exp.Archive)
	if exp.Archive == "" {
		archive = filepath.Join(Dir(t), name, name+".tar.bz2")
	}
	dir, err := extractCached(archive)
	if err != nil {
		t.Fatalf("corpus: %s: %v", name, err)
	}
	root := filepath.Join(dir, filepath.FromSlash(exp.SysfsRoot))
	if _, err := os.Stat(filepath.Join(root, "sys")); err != nil {
		t.Fatalf("corpus: %s: sysfs_root %q has no sys/: %v", name, exp.SysfsRoot, err)
	}
	return root
}

// Load parses machine name's expected.json, skipping the test when the
// shared folder is absent.
func Load(t testing.TB, name string) *Expected {
	t.Helper()
	p := filepath.Join(Dir(t), name, "expected.json")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("corpus: %v", err)
	}
	var e Expected
	if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("corpus: %s: %v", p, err)
	}
	if strings.Contains(e.Archive, "/") { // "NAME/NAME.tar.bz2" relative to the corpus
		e.Archive = filepath.Base(e.Archive)
	}
	return &e
}

// extractCached extracts archive once into the shared cache and returns the
// extraction directory.
func extractCached(archive string) (string, error) {
	sum, err := fileHash(archive)
	if err != nil {
		return "", err
	}
	base := filepath.Join(os.TempDir(), "numasteal-corpus")
	final := filepath.Join(base, strings.TrimSuffix(filepath.Base(archive), ".tar.bz2")+"-"+sum[:16])
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(base, ".extract-*")
	if err != nil {
		return "", err
	}
	if err := extract(archive, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		os.RemoveAll(tmp)
		if _, statErr := os.Stat(final); statErr == nil {
			return final, nil // another test binary got there first
		}
		return "", err
	}
	return final, nil
}

func fileHash(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// extract unpacks a .tar.bz2 holding directories, regular files and
// relative symlinks (created without being followed: many dangle) into
// dst, refusing entries that would land outside it. This is the function
// of the corpus README.
func extract(archive, dst string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	return extractTar(tar.NewReader(bzip2.NewReader(f)), dst)
}

// extractTar writes the entries of tr below dst.
func extractTar(tr *tar.Reader, dst string) error {
	prefix := filepath.Clean(dst) + string(os.PathSeparator)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dst, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, prefix) {
			return fmt.Errorf("entry %q escapes the extraction directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			w, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			if _, err := io.Copy(w, tr); err != nil {
				w.Close()
				return err
			}
			if err := w.Close(); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, p); err != nil {
				return err
			}
		}
	}
}
