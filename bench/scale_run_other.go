//go:build !linux

package bench

import (
	"context"
	"errors"
)

// RunScaleRuns needs Linux (waitid WNOWAIT and /proc).
func RunScaleRuns(ctx context.Context, o ScaleRunOptions) ([]ScaleRunRow, error) {
	return nil, errors.New("bench: scale run needs Linux")
}
