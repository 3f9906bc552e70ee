//go:build !linux

package supervise

import (
	"context"
	"io"
	"os/exec"

	"go.uber.org/zap"

	"github.com/numasteal/numasteal/affinity"
)

// Supervision needs Linux (process groups plus /proc, cgroup v2, prctl and
// Pdeathsig); elsewhere New fails with ErrUnsupported and nothing else can
// be reached. The declarations below keep the API the same.

// Supervisor starts tasks and sees that each ends whole (Linux only).
type Supervisor struct{}

// Task is one started command and everything it starts (Linux only).
type Task struct{}

// New fails with ErrUnsupported.
func New(o Options) (*Supervisor, error) { return nil, ErrUnsupported }

// RunID is unsupported here; see the Linux documentation.
func (s *Supervisor) RunID() string { return "" }

// Mechanisms is unsupported here; see the Linux documentation.
func (s *Supervisor) Mechanisms() Mechanisms { return Mechanisms{} }

// Start is unsupported here; see the Linux documentation.
func (s *Supervisor) Start(ctx context.Context, cmd *exec.Cmd) (*Task, error) {
	return nil, ErrUnsupported
}

// StartPlaced is unsupported here; see the Linux documentation.
func (s *Supervisor) StartPlaced(ctx context.Context, cmd *exec.Cmd, p affinity.Placement) (*Task, error) {
	return nil, ErrUnsupported
}

// StartUnmonitored is unsupported here; see the Linux documentation.
func (s *Supervisor) StartUnmonitored(ctx context.Context, cmd *exec.Cmd, p *affinity.Placement) (*Task, error) {
	return nil, ErrUnsupported
}

// StartHere is unsupported here; see the Linux documentation.
func (s *Supervisor) StartHere(ctx context.Context, cmd *exec.Cmd, p *affinity.Placement) (*Task, error) {
	return nil, ErrUnsupported
}

// Monitor is unsupported here; see the Linux documentation.
func (t *Task) Monitor() {}

// KillAll is unsupported here; see the Linux documentation.
func (s *Supervisor) KillAll() {}

// StopTasks is unsupported here; see the Linux documentation.
func (s *Supervisor) StopTasks() error { return ErrUnsupported }

// ContinueTasks is unsupported here; see the Linux documentation.
func (s *Supervisor) ContinueTasks() error { return ErrUnsupported }

// TempPath is unsupported here; see the Linux documentation.
func (s *Supervisor) TempPath(path string) func() { return func() {} }

// SetTokens is unsupported here; see the Linux documentation.
func (s *Supervisor) SetTokens(n int) {}

// Close is unsupported here; see the Linux documentation.
func (s *Supervisor) Close() error { return nil }

// ID is unsupported here; see the Linux documentation.
func (t *Task) ID() string { return "" }

// Pid is unsupported here; see the Linux documentation.
func (t *Task) Pid() int { return -1 }

// Cgroup is unsupported here; see the Linux documentation.
func (t *Task) Cgroup() string { return "" }

// Exited is unsupported here; see the Linux documentation.
func (t *Task) Exited() <-chan struct{} { return nil }

// Done is unsupported here; see the Linux documentation.
func (t *Task) Done() <-chan struct{} { return nil }

// Wait is unsupported here; see the Linux documentation.
func (t *Task) Wait() error { return ErrUnsupported }

// Cause is unsupported here; see the Linux documentation.
func (t *Task) Cause() error { return ErrUnsupported }

// Terminate is unsupported here; see the Linux documentation.
func (t *Task) Terminate() {}

// Kill is unsupported here; see the Linux documentation.
func (t *Task) Kill() {}

// Stop is unsupported here; see the Linux documentation.
func (t *Task) Stop(stop bool) error { return ErrUnsupported }

// MemoryCurrent is unsupported here; see the Linux documentation.
func (t *Task) MemoryCurrent() (int64, bool) { return 0, false }

// MaybeWatchdog returns at once: there is no watchdog without Linux.
func MaybeWatchdog() {}

// RunWatchdog fails with ErrUnsupported.
func RunWatchdog(ctl io.Reader, tokens io.Writer, log *zap.Logger) error { return ErrUnsupported }

// SetTaskMemoryLimit is unsupported here; see the Linux documentation.
func (s *Supervisor) SetTaskMemoryLimit(limit int64) error { return ErrUnsupported }
