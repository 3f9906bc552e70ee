package buildgraph

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks for leaked goroutines, and points XDG_STATE_HOME at a
// temporary directory so that LoadHistory's key (history_key.go) is not
// made in the real home.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "numasteal-state")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", dir)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}
