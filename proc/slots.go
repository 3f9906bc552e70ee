package proc

import (
	"context"
	"sync"
	"time"
)

// slotSem is the counting semaphore of running-process slots: a process
// task holds its slots from before its fork until its process group is
// gone. Waiters are served strictly in the order they queued (like
// x/sync/semaphore), so tasks handed out in critical-path order start in
// that order even when every task was admitted at once (`numasteal run -j
// 0`). A slot is not a worker: the workers stay free for Go tasks while
// processes wait.
type slotSem struct {
	mu      sync.Mutex
	size    int
	free    int
	waiters []*slotWaiter // FIFO
}

type slotWaiter struct {
	n       int
	ready   chan struct{} // closed when granted
	granted bool          // guarded by slotSem.mu
	// slice is when the scheduling slice the grant hands on began: the
	// releaser's (handOverYield), zero for a grant at enqueue or by a
	// waiter leaving. Set before ready is closed.
	slice time.Time
}

func newSlotSem(size int) *slotSem { return &slotSem{size: size, free: size} }

// clamp bounds a request to the semaphore's size, so a task declaring more
// CPUs than there are slots runs alone instead of never.
func (s *slotSem) clamp(n int) int { return min(max(n, 1), s.size) }

// enqueue asks for n slots (already clamped) and returns the waiter; the
// request takes its place in the queue now, in the caller's goroutine.
func (s *slotSem) enqueue(n int) *slotWaiter {
	w := &slotWaiter{n: n, ready: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.waiters) == 0 && s.free >= n {
		s.free -= n
		w.granted = true
		close(w.ready)
		return w
	}
	s.waiters = append(s.waiters, w)
	return w
}

// wait blocks until w is granted or ctx is done. On ctx done it gives the
// place up (or the slots back, when they were granted meanwhile) and
// returns ctx's error.
func (s *slotSem) wait(ctx context.Context, w *slotWaiter) error {
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if w.granted {
		s.mu.Unlock()
		s.release(w.n, time.Time{})
	} else {
		for i, v := range s.waiters {
			if v == w {
				s.waiters = append(s.waiters[:i], s.waiters[i+1:]...)
				break
			}
		}
		// Leaving may unblock the waiters behind us.
		s.grantLocked(time.Time{})
		s.mu.Unlock()
	}
	return context.Cause(ctx)
}

// release returns n slots and grants queued waiters in order, handing on
// slice, when the releasing goroutine's scheduling slice began.
func (s *slotSem) release(n int, slice time.Time) {
	s.mu.Lock()
	s.free += n
	s.grantLocked(slice)
	s.mu.Unlock()
}

// grantLocked grants the head of the queue while it fits, handing each
// grant slice. s.mu held.
func (s *slotSem) grantLocked(slice time.Time) {
	for len(s.waiters) > 0 && s.free >= s.waiters[0].n {
		w := s.waiters[0]
		s.waiters = s.waiters[1:]
		s.free -= w.n
		w.granted = true
		w.slice = slice
		close(w.ready)
	}
}

// used returns the slots held now.
func (s *slotSem) used() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size - s.free
}
