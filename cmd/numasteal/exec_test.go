package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecUsageAndNotFound: numasteal exec with no command prints its
// usage (exit 2), and a command that cannot run is one line naming it,
// exit 127, before any daemon is asked.
func TestExecUsageAndNotFound(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"exec"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), "usage: numasteal exec") {
		t.Errorf("no command: exit %d, stderr %q; want %d and the usage", code, errb.String(), exitUsage)
	}
	dir := t.TempDir()
	noexec := filepath.Join(dir, "noexec")
	os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644)
	t.Setenv("NUMASTEAL_SOCKET", filepath.Join(dir, "sock")) // no daemon may be started
	for _, tc := range []struct{ prog, why string }{
		{"numasteal-no-such-program", "not found in PATH"},
		{filepath.Join(dir, "missing"), "no such file or directory"},
		{noexec, "permission denied"},
	} {
		errb.Reset()
		code := dispatch(context.Background(), []string{"exec", tc.prog, "-j"}, &out, &errb)
		if want := "numasteal exec: " + tc.prog + ": " + tc.why + "\n"; code != exitNotFound || errb.String() != want {
			t.Errorf("%s: exit %d, %q; want %d, %q", tc.prog, code, errb.String(), exitNotFound, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "sock")); err == nil {
		t.Error("a daemon was started for a command that cannot run")
	}
}
