//go:build linux

package supervise

import (
	"fmt"
	"os/exec"
	"runtime"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/topology/cpuset"
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
// Narrowing the mask of a running thread to another CPU migrates it
// there (a context switch), and restoring it may migrate it back, so a
// start placed on one CPU, with no memory policy (the common placement of
// a process task), goes instead to a kept thread pinned to that CPU for
// good, made at the first such start: its child inherits the mask with
// no sched_setaffinity at all.

//
// Each kept thread may enter the tasks' v1 memory cgroup for good when it
// starts (doc.go, "The tasks' memory"): its children are then born there.

// forkReq asks a kept thread to start cmd.
type forkReq struct {
	cmd   *exec.Cmd
	place *affinity.Placement
	done  chan forkDone
}

// forkDone is a kept thread's answer: Start's error, and whether the
// thread is in the tasks' memory cgroup, so that its child was born there.
type forkDone struct {
	err    error
	inside bool
}

// forker is the pool of kept threads.
type forker struct {
	reqs chan forkReq
	wg   sync.WaitGroup
	log  *zap.Logger
	// enter, when not nil, moves the calling kept thread into the tasks'
	// memory cgroup, once, as the thread starts.
	enter func() error

	mu     sync.Mutex
	closed bool
	onCPU  map[int]chan forkReq // the requests of the thread pinned to a CPU
}

// newForker starts n kept threads, each moved by enter (nil: none) into
// the tasks' memory cgroup.
func newForker(n int, log *zap.Logger, enter func() error) *forker {
	f := &forker{reqs: make(chan forkReq), log: log, enter: enter, onCPU: make(map[int]chan forkReq)}
	f.wg.Add(n)
	for range n {
		lockedOffMain(func() { f.thread(log) })
	}
	return f
}

// lockedOffMain runs body in a new goroutine locked to an OS thread that
// is not the process's main thread, and returns at once; body must not
// unlock it. The main thread is the thread group's leader: in the v1
// memory hierarchy its cgroup is the one the whole process's memory is
// charged to (mm->owner), so it must never enter the tasks' cgroup. A
// goroutine that finds itself locked to it starts body's goroutine while
// it holds the main thread, so that the runtime gives that one another.
func lockedOffMain(body func()) {
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			body()
			return
		}
		started := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(started)
			body()
		}()
		<-started
		runtime.UnlockOSThread()
	}()
}

// enterMemory moves the calling kept thread into the tasks' memory cgroup
// and reports whether it is there; a failure is logged.
func (f *forker) enterMemory() bool {
	if f.enter == nil {
		return false
	}
	if err := f.enter(); err != nil {
		f.log.Warn("supervise: a fork thread stays out of the tasks' memory cgroup; its children are moved in after the fork", zap.Error(err))
		return false
	}
	return true
}

// cpuThread returns the requests channel of the kept thread pinned to
// cpu, starting it first if need be; nil when it cannot be pinned there
// (the CPU is not allowed) or the forker is closed.
func (f *forker) cpuThread(cpu int) chan forkReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	if reqs, ok := f.onCPU[cpu]; ok {
		return reqs
	}
	reqs := make(chan forkReq)
	started := make(chan bool)
	f.wg.Add(1)
	lockedOffMain(func() { f.pinnedThread(cpu, reqs, started) })
	if !<-started {
		reqs = nil
	}
	f.onCPU[cpu] = reqs
	return reqs
}

// pinnedThread is the goroutine of the kept thread pinned to cpu, locked
// by lockedOffMain. Like thread it never unlocks.
func (f *forker) pinnedThread(cpu int, reqs chan forkReq, started chan<- bool) {
	defer f.wg.Done()
	if err := affinity.PinThread(cpuset.Of(cpu)); err != nil {
		f.log.Warn("supervise: pinning a fork thread", zap.Int("cpu", cpu), zap.Error(err))
		started <- false
		return
	}
	inside := f.enterMemory()
	started <- true
	for r := range reqs {
		r.done <- forkDone{r.cmd.Start(), inside}
	}
}

// thread is one kept thread's goroutine, locked by lockedOffMain. It
// never unlocks: when reqs is closed it returns still locked, and the
// runtime ends the thread.
func (f *forker) thread(log *zap.Logger) {
	defer f.wg.Done()
	mask, maskErr := affinity.Allowed()
	mem, memErr := affinity.GetMemPolicy()
	inside := f.enterMemory()
	for r := range f.reqs {
		if r.place == nil {
			r.done <- forkDone{r.cmd.Start(), inside}
			continue
		}
		r.done <- forkDone{placedStart(r.cmd, *r.place, maskErr, memErr), inside}
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

// start runs cmd.Start on a kept thread and returns its error, and
// whether the child was born in the tasks' memory cgroup.
func (f *forker) start(cmd *exec.Cmd, place *affinity.Placement) (inside bool, err error) {
	done := make(chan forkDone, 1)
	reqs := f.reqs
	if place != nil && place.Mem == nil && place.CPUs.Len() == 1 {
		if r := f.cpuThread(place.CPUs.First()); r != nil {
			reqs, place = r, nil
		}
	}
	reqs <- forkReq{cmd: cmd, place: place, done: done}
	d := <-done
	return d.inside, d.err
}

// close ends the kept threads; call it once, after every task has ended
// (a child still running from a kept thread gets its Pdeathsig).
func (f *forker) close() {
	f.mu.Lock()
	f.closed = true
	for _, reqs := range f.onCPU {
		if reqs != nil {
			close(reqs)
		}
	}
	f.mu.Unlock()
	close(f.reqs)
	f.wg.Wait()
}
