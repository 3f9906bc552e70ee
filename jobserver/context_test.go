//go:build linux

package jobserver

import (
	"context"
	"testing"
	"time"
)

// contextTimeout is context.WithTimeout on the test's context.
func contextTimeout(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), d)
}

// awaitClient waits until cond holds: a client's waiter counts, which show
// that a goroutine has reached the blocking part of Acquire. It fails the
// test after a minute, far beyond any scheduling delay of a loaded host.
func awaitClient(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute, still no %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
