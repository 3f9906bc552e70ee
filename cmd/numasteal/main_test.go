package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/supervise"
)

// TestMain lets the test binary serve as a run's watchdog, as main does:
// "numasteal run" re-executes its own executable (here, this binary) for
// it. It also points XDG_STATE_HOME at a temporary directory, so that the
// history key of "numasteal run" (buildgraph.HistoryKey) is not made in
// the real home by any test of the package; a test binary run as a child
// of a test (cliCommand) keeps its parent's.
func TestMain(m *testing.M) {
	supervise.MaybeWatchdog()
	if strings.HasPrefix(filepath.Base(os.Getenv("XDG_STATE_HOME")), "numasteal-state") {
		code := m.Run()
		removeBinary()
		os.Exit(code)
	}
	dir, err := os.MkdirTemp("", "numasteal-state")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", dir)
	code := m.Run()
	removeBinary()
	os.RemoveAll(dir)
	os.Exit(code)
}
