package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/supervise"
)

// Signals, the orderly path.
//
// Every catchable signal that ends a run — SIGINT (Ctrl-C), SIGTERM, SIGHUP
// (the terminal or the ssh session went away), SIGQUIT, and SIGPIPE when
// stdout or stderr is a pipe whose reader is gone — cancels the command's
// context with the signal as its cause. "numasteal run" then ends every
// task (SIGTERM, then SIGKILL after --grace), records their outcomes, and
// writes its summary (to stderr when stdout is gone), history and trace;
// the exit status is 128 + the signal's number, as a shell reports a
// process killed by it, and never the bad-input code. A second ending
// signal kills every task at once (supervise.Supervisor.KillAll).
//
// Job control: SIGTSTP (Ctrl-Z) stops the running tasks first (they are in
// process groups of their own, so the terminal's signal does not reach
// them), then this process; SIGCONT continues them. SIGKILL cannot be
// caught: the supervisor's watchdog process ends the tasks then.
//
// SIGPIPE needs care: with signal.Notify, a write to a broken pipe returns
// EPIPE instead of killing the process, on every descriptor, so a SIGPIPE
// may come from a jobserver pipe or a task's stdin as well. Only a broken
// stdout or stderr (poll(2) reports POLLERR on it) ends the run.

// endingSignals are the signals that end a run through the orderly path.
func endingSignals() []os.Signal {
	return []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE}
}

// signals watches the process's signals for one command.
type signals struct {
	ch     chan os.Signal
	cancel context.CancelCauseFunc
	done   chan struct{}

	mu    sync.Mutex
	first syscall.Signal            // the signal that ended the command, 0 if none
	sup   *supervise.Supervisor     // the run's, for KillAll and job control
	stdio func(syscall.Signal) bool // reports whether a SIGPIPE is stdout's or stderr's
}

// SignalError is the cause of a command's context canceled by a signal.
type SignalError struct{ Signal syscall.Signal }

func (e *SignalError) Error() string { return "interrupted by " + signalName(e.Signal) }

// watchSignals starts watching and returns the command's context.
func watchSignals(parent context.Context) (context.Context, *signals) {
	ctx, cancel := context.WithCancelCause(parent)
	s := &signals{ch: make(chan os.Signal, 8), cancel: cancel, done: make(chan struct{}), stdio: stdioBroken}
	signal.Notify(s.ch, append(endingSignals(), syscall.SIGTSTP, syscall.SIGCONT)...)
	go s.loop()
	return context.WithValue(ctx, signalsKey{}, s), s
}

type signalsKey struct{}

// signalsOf returns the signals watcher of ctx, nil when there is none
// (a command called from a test without watchSignals).
func signalsOf(ctx context.Context) *signals {
	s, _ := ctx.Value(signalsKey{}).(*signals)
	return s
}

// attach gives the watcher the run's Supervisor: a second ending signal
// kills its tasks, and job control stops and continues them. A nil
// watcher does nothing.
func (s *signals) attach(sup *supervise.Supervisor) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.sup = sup
	s.mu.Unlock()
}

// detach forgets the Supervisor, before it is closed.
func (s *signals) detach() { s.attach(nil) }

func (s *signals) loop() {
	for {
		select {
		case <-s.done:
			return
		case sig := <-s.ch:
			s.handle(sig.(syscall.Signal))
		}
	}
}

func (s *signals) handle(sig syscall.Signal) {
	s.mu.Lock()
	sup := s.sup
	switch sig {
	case syscall.SIGTSTP:
		s.mu.Unlock()
		if sup != nil {
			sup.StopTasks()
		}
		// The default action, which signal.Notify replaced: stop this
		// process. Execution resumes here on SIGCONT.
		unix.Kill(os.Getpid(), unix.SIGSTOP)
		return
	case syscall.SIGCONT:
		s.mu.Unlock()
		if sup != nil {
			sup.ContinueTasks()
		}
		return
	case syscall.SIGPIPE:
		if !s.stdio(sig) {
			s.mu.Unlock()
			return // a pipe of ours other than stdout and stderr: EPIPE is handled where it was written
		}
	}
	first := s.first == 0
	if first {
		s.first = sig
	}
	s.mu.Unlock()
	if first {
		s.cancel(&SignalError{Signal: sig})
	} else if sup != nil {
		sup.KillAll()
	}
}

// stop ends the watching and restores the default dispositions.
func (s *signals) stop() {
	signal.Stop(s.ch)
	close(s.done)
	s.cancel(nil)
}

// signal returns the signal that ended the command, 0 if none.
func (s *signals) signal() syscall.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

// exitCode is the command's exit status: 128 + the signal's number when a
// signal ended it (a shell's convention), else code.
func (s *signals) exitCode(code int) int {
	if sig := s.signal(); sig != 0 {
		return 128 + int(sig)
	}
	return code
}

// stdioBroken reports whether stdout or stderr is a pipe or socket whose
// other end is gone.
func stdioBroken(syscall.Signal) bool {
	fds := []unix.PollFd{{Fd: 1, Events: unix.POLLOUT}, {Fd: 2, Events: unix.POLLOUT}}
	if _, err := unix.Poll(fds, 0); err != nil {
		return false
	}
	for _, f := range fds {
		if f.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}

func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// fallbackWriter writes to w until a write fails with EPIPE (the reader of
// stdout is gone: `numasteal run c | head -1`), then to alt, so that the
// summary still reaches stderr.
type fallbackWriter struct {
	mu     sync.Mutex
	w, alt io.Writer
	broken bool
}

func (f *fallbackWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.broken {
		n, err := f.w.Write(p)
		if !errors.Is(err, syscall.EPIPE) {
			return n, err
		}
		f.broken = true
	}
	return f.alt.Write(p)
}

// Unwrap returns the writer f writes to first, so that isTerminal sees
// the terminal behind f.
func (f *fallbackWriter) Unwrap() io.Writer { return f.w }
