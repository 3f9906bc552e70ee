// Package freelist holds idle resources for reuse: a stack under a mutex
// that a pool takes from, gives back to, and empties when it closes (the
// output files of proc's runner, the task cgroups and wait eventfds of
// supervise's run).
package freelist

import "sync"

// List is a stack of idle items, safe for concurrent use. The zero value
// is empty and ready.
type List[T any] struct {
	mu    sync.Mutex
	items []T
}

// Pop takes the item given back last, if any.
func (l *List[T]) Pop() (T, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var zero T
	n := len(l.items)
	if n == 0 {
		return zero, false
	}
	it := l.items[n-1]
	l.items[n-1] = zero
	l.items = l.items[:n-1]
	return it, true
}

// Push gives it back.
func (l *List[T]) Push(it T) {
	l.mu.Lock()
	l.items = append(l.items, it)
	l.mu.Unlock()
}

// Drain empties the list and calls release with each item it held.
func (l *List[T]) Drain(release func(T)) {
	l.mu.Lock()
	items := l.items
	l.items = nil
	l.mu.Unlock()
	for _, it := range items {
		release(it)
	}
}
