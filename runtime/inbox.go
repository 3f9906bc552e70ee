package runtime

import (
	"sync"
	"sync/atomic"
)

// inbox is a worker's queue of injected tasks: tasks submitted from outside
// the workers land here, at the worker the policy's placement chose. Any
// goroutine may push; the owner pops and thieves steal, both from the
// front, so injected tasks run in submission order (FIFO), unlike the LIFO
// deque. A mutex is enough: injection is not the fork-join hot path.
type inbox struct {
	mu     sync.Mutex
	q      []*Task // ring of len(q) slots
	head   int     // index of the oldest task
	n      int     // number of queued tasks
	closed bool    // set by the owner as it exits: pushes then fail
	// size mirrors n for lock-free emptiness checks. It is stored under mu
	// after each change; readers outside mu may see a stale value, which the
	// park protocol tolerates (see park.go: a push is followed by notify).
	size atomic.Int64
}

// push appends t; it reports false when the inbox is closed. Any goroutine.
func (b *inbox) push(t *Task) bool {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return false
	}
	if b.n == len(b.q) {
		nq := make([]*Task, max(16, 2*len(b.q)))
		for i := range b.n {
			nq[i] = b.q[(b.head+i)%len(b.q)]
		}
		b.q, b.head = nq, 0
	}
	b.q[(b.head+b.n)%len(b.q)] = t
	b.n++
	b.size.Store(int64(b.n))
	b.mu.Unlock()
	return true
}

// pop removes the oldest task, or returns nil. Any goroutine.
func (b *inbox) pop() *Task {
	if b.size.Load() == 0 {
		return nil
	}
	b.mu.Lock()
	var t *Task
	if b.n > 0 {
		t = b.takeLocked()
	}
	b.mu.Unlock()
	return t
}

// takeLocked removes and returns the oldest task; b.mu is held and the
// inbox is not empty.
func (b *inbox) takeLocked() *Task {
	t := b.q[b.head]
	b.q[b.head] = nil
	b.head = (b.head + 1) % len(b.q)
	b.n--
	b.size.Store(int64(b.n))
	return t
}

// frontIs reports whether the oldest task is a task of g. Any goroutine.
func (b *inbox) frontIs(g *Group) bool {
	if b.size.Load() == 0 {
		return false
	}
	b.mu.Lock()
	is := b.n > 0 && b.q[b.head].group == g
	b.mu.Unlock()
	return is
}

// popOf removes the oldest task if it is a task of g, else returns nil.
// Any goroutine.
func (b *inbox) popOf(g *Group) *Task {
	if b.size.Load() == 0 {
		return nil
	}
	b.mu.Lock()
	var t *Task
	if b.n > 0 && b.q[b.head].group == g {
		t = b.takeLocked()
	}
	b.mu.Unlock()
	return t
}

// close marks the inbox closed and returns the tasks still queued, which
// the owner then runs (or cancels) before it exits. Owner only.
func (b *inbox) close() []*Task {
	b.mu.Lock()
	b.closed = true
	out := make([]*Task, 0, b.n)
	for b.n > 0 {
		out = append(out, b.q[b.head])
		b.q[b.head] = nil
		b.head = (b.head + 1) % len(b.q)
		b.n--
	}
	b.size.Store(0)
	b.mu.Unlock()
	return out
}
