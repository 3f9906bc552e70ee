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

func (s *Supervisor) RunID() string          { return "" }
func (s *Supervisor) Mechanisms() Mechanisms { return Mechanisms{} }
func (s *Supervisor) Start(ctx context.Context, cmd *exec.Cmd) (*Task, error) {
	return nil, ErrUnsupported
}
func (s *Supervisor) StartPlaced(ctx context.Context, cmd *exec.Cmd, p affinity.Placement) (*Task, error) {
	return nil, ErrUnsupported
}
func (s *Supervisor) KillAll()                    {}
func (s *Supervisor) StopTasks() error            { return ErrUnsupported }
func (s *Supervisor) ContinueTasks() error        { return ErrUnsupported }
func (s *Supervisor) TempPath(path string) func() { return func() {} }
func (s *Supervisor) SetTokens(n int)             {}
func (s *Supervisor) Close() error                { return nil }
func (t *Task) ID() string                        { return "" }
func (t *Task) Pid() int                          { return -1 }
func (t *Task) Cgroup() string                    { return "" }
func (t *Task) Exited() <-chan struct{}           { return nil }
func (t *Task) Done() <-chan struct{}             { return nil }
func (t *Task) Wait() error                       { return ErrUnsupported }
func (t *Task) Cause() error                      { return ErrUnsupported }
func (t *Task) Terminate()                        {}
func (t *Task) Kill()                             {}

// MaybeWatchdog returns at once: there is no watchdog without Linux.
func MaybeWatchdog() {}

// RunWatchdog fails with ErrUnsupported.
func RunWatchdog(ctl io.Reader, tokens io.Writer, log *zap.Logger) error { return ErrUnsupported }
