package jobserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
)

// Pool is the jobserver of one run of many jobs: the one inherited from a
// parent make (joined), or one this process serves to its children. Each
// job takes one slot with Admit before its process starts and gives it back
// with the returned release once its process, and everything the process
// started, is gone; Prepare hands the jobserver to the job's child, whose
// implicit slot is the job's slot.
//
// In served mode the pool keeps the server's count of running children
// (Server.Started when a job holds its slot, Server.Exited when it is gone),
// so that tokens a killed child died holding are written back once no job
// runs (Server.Reconcile). A release must therefore come only after the
// job's whole process group is gone, or a token still held by a surviving
// grandchild would be counted lost.
//
// A nil *Pool is valid and means "no jobserver": Admit grants at once,
// Prepare does nothing.
type Pool struct {
	server   *Server // served mode; nil when joined
	client   *Client // where jobs take their slots
	held     func(tokens int)
	unusable func(error)
	// broken is set once a joined jobserver's pipe is at end of file
	// (ErrBroken): Admit then grants at once, and the caller's own limit
	// bounds the run.
	broken atomic.Bool

	mu      sync.Mutex
	relErr  error // first failed Release
	relErrN int   // failed Releases
}

// PoolOptions configure OpenPool. The zero value joins an inherited
// jobserver and otherwise has none.
type PoolOptions struct {
	// Serve makes OpenPool serve a jobserver of Slots slots when the
	// environment names none it can use.
	Serve bool
	// Slots is the size of a served jobserver (1..MaxSlots).
	Slots int
	// FIFO serves the named-FIFO form (make ≥ 4.4) instead of a pipe.
	FIFO bool
	// Unusable, when not nil, is called once with the *UnavailableError
	// of a jobserver that MAKEFLAGS names but that cannot be used (closed
	// or reused descriptors, a missing FIFO); OpenPool then goes on as if
	// there were none, since a build without the jobserver still works.
	Unusable func(error)
	// Held, when not nil, is called with the number of tokens (slots
	// beyond the implicit one) the pool holds, each time it changes: a
	// watchdog that writes them back should this process be killed keeps
	// its count with it (supervise.Supervisor.SetTokens).
	Held func(tokens int)
}

// OpenPool joins the jobserver that env's MAKEFLAGS names (a parent make's,
// or another numasteal's), or, when there is none and o.Serve is set,
// serves a new one. It returns a nil *Pool when there is neither.
func OpenPool(env []string, o PoolOptions) (*Pool, error) {
	c, err := FromEnv(env)
	switch {
	case err == nil:
		return &Pool{client: c, held: o.Held, unusable: o.Unusable}, nil
	case errors.Is(err, ErrNoJobserver):
	default:
		var ue *UnavailableError
		if !errors.As(err, &ue) {
			return nil, err
		}
		if o.Unusable != nil {
			o.Unusable(err)
		}
	}
	if !o.Serve {
		return nil, nil
	}
	var opts []Option
	if o.FIFO {
		opts = append(opts, WithFIFO(""))
	}
	s, err := NewServer(o.Slots, opts...)
	if err != nil {
		return nil, err
	}
	return &Pool{server: s, client: s.Client(), held: o.Held}, nil
}

// Joined reports whether the pool is a parent's jobserver rather than one
// served here.
func (p *Pool) Joined() bool { return p != nil && p.server == nil }

// Jobs returns the jobserver's slot count as it advertises it (make's -jN),
// 0 when unknown or when there is no pool.
func (p *Pool) Jobs() int {
	if p == nil {
		return 0
	}
	return max(p.client.Auth().Jobs, 0)
}

// Admit takes one slot for a job, the implicit slot first and then tokens,
// blocking until one is free or ctx is done. Call release exactly once,
// when the job's processes are all gone, whatever their outcome.
//
// A joined jobserver whose pipe is found at end of file (ErrBroken: its
// make is gone) is reported once through PoolOptions.Unusable, and from
// then on Admit grants at once: the job runs on the caller's own slots
// rather than failing.
func (p *Pool) Admit(ctx context.Context) (release func(), err error) {
	if p == nil || p.broken.Load() {
		return func() {}, nil
	}
	tok, err := p.client.Acquire(ctx)
	if errors.Is(err, ErrBroken) {
		if !p.broken.Swap(true) && p.unusable != nil {
			p.unusable(err)
		}
		return func() {}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jobserver: %w", err)
	}
	if p.server != nil {
		p.server.Started()
	}
	p.reportHeld()
	return func() {
		if p.server != nil {
			p.server.Exited() // may refill tokens the child died holding
		}
		if err := p.client.Release(tok); err != nil {
			p.mu.Lock()
			if p.relErr == nil {
				p.relErr = err
			}
			p.relErrN++
			p.mu.Unlock()
		}
		p.reportHeld()
	}, nil
}

// reportHeld tells PoolOptions.Held how many tokens the pool holds. The
// count is read after the change, so concurrent changes may report out of
// order only transiently: the last call after the last change is right.
func (p *Pool) reportHeld() {
	if p.held != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.held(p.client.Held())
	}
}

// TempDir returns the directory of a served FIFO jobserver, which Close
// removes ("" for the pipe form, a joined jobserver, or no pool), so that
// a watchdog can remove it should this process be killed first.
func (p *Pool) TempDir() string {
	if p == nil || p.server == nil {
		return ""
	}
	return p.server.dir
}

// TokenFile returns a new descriptor of a joined jobserver's write side,
// for a watchdog process that writes back the tokens this process holds
// should it be killed (supervise.Options.WatchdogTokens). It returns nil
// for a served pool (its children die with it, and nobody else waits on
// its tokens) and for no pool. The caller closes the file.
func (p *Pool) TokenFile() (*os.File, error) {
	if !p.Joined() {
		return nil, nil
	}
	return p.client.tokenFile()
}

// Prepare gives cmd the jobserver: MAKEFLAGS and, for the pipe form, its
// descriptors. It does nothing for a nil pool.
func (p *Pool) Prepare(cmd *exec.Cmd) error {
	if p == nil {
		return nil
	}
	return p.client.Prepare(cmd)
}

// PoolReport is what a pool saw in its run.
type PoolReport struct {
	// Slots is a served jobserver's size (0 when joined).
	Slots int
	// Recovered and Drained count the tokens a served jobserver wrote back
	// for killed children and the surplus it removed (Server.Stats).
	Recovered, Drained int
	// ReleaseFailures counts slots that could not be written back;
	// ReleaseErr is the first such error.
	ReleaseFailures int
	ReleaseErr      error
}

// Close ends the pool once every job is gone: a joined jobserver gets back
// every token still held (also after an interrupt), a served one is closed.
// It returns what the run saw, and the error of closing.
func (p *Pool) Close() (PoolReport, error) {
	if p == nil {
		return PoolReport{}, nil
	}
	var r PoolReport
	if p.server != nil {
		if st, err := p.server.Stats(); err == nil {
			r.Slots, r.Recovered, r.Drained = st.Slots, st.Recovered, st.Drained
		}
	}
	p.mu.Lock()
	r.ReleaseFailures, r.ReleaseErr = p.relErrN, p.relErr
	p.mu.Unlock()
	var err error
	if p.server != nil {
		err = p.server.Close()
	} else {
		err = p.client.Close()
	}
	return r, err
}
