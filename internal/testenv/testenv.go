// Package testenv finds what the project's tests need outside the module:
// the shared corpus of real sysfs dumps and the numa-vm tool, both in the
// shared/ folder that sits beside the repository (../shared from the module
// root), or wherever $NUMASTEAL_SHARED points.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ModuleRoot returns the directory holding go.mod, found by walking up from
// the current directory (go test runs each package in its own directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testenv: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testenv: no go.mod above the current directory")
		}
		dir = parent
	}
}

// SharedDir returns the shared/ folder: $NUMASTEAL_SHARED when set, else
// ../shared beside the module root. It fails when the folder is missing.
func SharedDir() (string, error) {
	if d := os.Getenv("NUMASTEAL_SHARED"); d != "" {
		if _, err := os.Stat(d); err != nil {
			return "", fmt.Errorf("testenv: NUMASTEAL_SHARED: %w", err)
		}
		return d, nil
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	d := filepath.Join(filepath.Dir(root), "shared")
	if _, err := os.Stat(d); err != nil {
		return "", fmt.Errorf("testenv: shared folder: %w", err)
	}
	return d, nil
}

// TB is the part of testing.TB that the helpers use.
type TB interface {
	Helper()
	Skipf(format string, args ...any)
}

// RequireShared returns SharedDir or skips the test with a message that says
// what is missing, so a run without the corpus never passes silently.
func RequireShared(t TB) string {
	t.Helper()
	d, err := SharedDir()
	if err != nil {
		t.Skipf("SKIP: real-data test needs the shared/ folder beside the repository (or $NUMASTEAL_SHARED): %v", err)
	}
	return d
}
