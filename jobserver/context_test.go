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
