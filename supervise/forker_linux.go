//go:build linux

package supervise

import (
	"fmt"
	"os/exec"
	"runtime"
	"sync"

	"go.uber.org/zap"

	"github.com/numasteal/numasteal/affinity"
)

// The forker (doc.go, "Parent death"): Pdeathsig is delivered when the
// thread that cloned the child exits, not when the process does, and Go
// ends or reuses its threads as it likes. So every task is started from
// one of a few goroutines that lock their OS thread for the Supervisor's
// whole life and never unlock it: a child's Pdeathsig then fires only when
// this process dies (or the Supervisor closes, when no task is left).
//
// The kept thread is ours alone, so a placed start narrows its CPU mask
// and memory policy for the fork and puts them back after, where
// affinity.StartPlaced must borrow (or kill) a thread of the runtime's.

// forkReq asks a kept thread to start cmd.
type forkReq struct {
	cmd   *exec.Cmd
	place *affinity.Placement
	errc  chan error
}

// forker is the pool of kept threads.
type forker struct {
	reqs chan forkReq
	wg   sync.WaitGroup
}

// newForker starts n kept threads.
func newForker(n int, log *zap.Logger) *forker {
	f := &forker{reqs: make(chan forkReq)}
	f.wg.Add(n)
	for range n {
		go f.thread(log)
	}
	return f
}

// thread is one kept thread's goroutine. It never unlocks: when reqs is
// closed it returns still locked, and the runtime ends the thread.
func (f *forker) thread(log *zap.Logger) {
	defer f.wg.Done()
	runtime.LockOSThread()
	mask, maskErr := affinity.Allowed()
	mem, memErr := affinity.GetMemPolicy()
	for r := range f.reqs {
		if r.place == nil {
			r.errc <- r.cmd.Start()
			continue
		}
		r.errc <- placedStart(r.cmd, *r.place, maskErr, memErr)
		// Put the thread back as it was, for the next unplaced start.
		if maskErr == nil {
			if err := affinity.PinThread(mask); err != nil {
				log.Warn("supervise: restoring the fork thread's CPU mask", zap.Error(err))
			}
		}
		if r.place.Mem != nil && memErr == nil {
			if err := affinity.SetMemPolicy(mem.Mode, mem.Nodes); err != nil {
				log.Warn("supervise: restoring the fork thread's memory policy", zap.Error(err))
			}
		}
	}
}

// placedStart narrows the calling (kept) thread to p and starts cmd; the
// child inherits both the mask and the policy (kernel/fork.c). Without a
// way to restore the thread afterwards (maskErr, memErr), it refuses.
func placedStart(cmd *exec.Cmd, p affinity.Placement, maskErr, memErr error) error {
	if maskErr != nil {
		return fmt.Errorf("supervise: reading the fork thread's CPU mask: %w", maskErr)
	}
	if err := affinity.PinThread(p.CPUs); err != nil {
		return fmt.Errorf("supervise: placing the child: %w", err)
	}
	if p.Mem != nil {
		if memErr != nil {
			return fmt.Errorf("supervise: reading the fork thread's memory policy: %w", memErr)
		}
		if err := affinity.SetMemPolicy(p.Mem.Mode, p.Mem.Nodes); err != nil {
			return fmt.Errorf("supervise: placing the child's memory: %w", err)
		}
	}
	return cmd.Start()
}

// start runs cmd.Start on a kept thread and returns its error.
func (f *forker) start(cmd *exec.Cmd, place *affinity.Placement) error {
	errc := make(chan error, 1)
	f.reqs <- forkReq{cmd: cmd, place: place, errc: errc}
	return <-errc
}

// close ends the kept threads; call it once, after every task has ended
// (a child still running from a kept thread gets its Pdeathsig).
func (f *forker) close() {
	close(f.reqs)
	f.wg.Wait()
}
