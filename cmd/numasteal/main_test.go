package main

import (
	"os"
	"testing"

	"github.com/numasteal/numasteal/supervise"
)

// TestMain lets the test binary serve as a run's watchdog, as main does:
// "numasteal run" re-executes its own executable (here, this binary) for it.
func TestMain(m *testing.M) {
	supervise.MaybeWatchdog()
	os.Exit(m.Run())
}
