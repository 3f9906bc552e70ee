package runtime

import (
	"sync"
	"sync/atomic"
)

// Counter is a statistics counter for tasks, built the way FreeBSD's
// counter(9) is: each worker has its own slot that only it increments, with
// a plain add, and the runtime folds the slots into an atomic total at the
// worker's safe points (every defaultFoldEvery tasks and before it parks).
// Load reads only the totals — never another worker's slot, which would be
// a data race — so it may lag the increments by at most one fold of each
// running worker; once the runtime is idle or closed it is exact. The slot
// is 64 bits wide so that Inc needs no overflow check between folds: an
// increment is one add to memory, like a plain counter++.
//
// Make one with Runtime.NewCounter. Inc and Add must be called from tasks.
type Counter struct {
	rt    *Runtime
	slots []counterSlot // by worker id
}

// counterSlot is one worker's part of a Counter, alone on its cache line so
// two workers' increments never share a line.
type counterSlot struct {
	local uint64        // owner only: plain increments
	_     [56]byte      // keep total off local's line (false sharing)
	total atomic.Uint64 // owner adds at folds; Load reads
	_     [56]byte
}

// counterRegistry lists a runtime's Counters for the workers' folds. The
// slice is replaced, never changed, so workers read it without a lock.
type counterRegistry struct {
	mu   sync.Mutex
	list atomic.Pointer[[]*Counter]
}

// NewCounter returns a new per-worker counter of rt.
func (rt *Runtime) NewCounter() *Counter {
	c := &Counter{rt: rt, slots: make([]counterSlot, len(rt.workers))}
	r := &rt.counters
	r.mu.Lock()
	var list []*Counter
	if p := r.list.Load(); p != nil {
		list = append(list, *p...)
	}
	list = append(list, c)
	r.list.Store(&list)
	r.mu.Unlock()
	return c
}

// Inc adds one to the counter from the task running with ctx: a plain
// increment of the running worker's slot.
func (c *Counter) Inc(ctx *Ctx) {
	c.slots[ctx.w.id].local++
}

// Add adds n to the counter from the task running with ctx.
func (c *Counter) Add(ctx *Ctx, n uint64) {
	c.slots[ctx.w.id].local += n
}

// Load returns the folded total.
func (c *Counter) Load() uint64 {
	var n uint64
	for i := range c.slots {
		n += c.slots[i].total.Load()
	}
	return n
}

func (s *counterSlot) fold() {
	if s.local != 0 {
		s.total.Add(s.local)
		s.local = 0
	}
}

// foldCounters folds w's slot of every Counter. Owner only.
func (w *worker) foldCounters() {
	if p := w.rt.counters.list.Load(); p != nil {
		for _, c := range *p {
			c.slots[w.id].fold()
		}
	}
}

// Local returns the running worker's slot of c as a handle whose Inc is a
// single add to memory: the counter(9) way of hoisting the per-CPU address
// out of a loop. The handle is valid only during the task that ctx belongs
// to (a task never changes worker while it runs); do not keep it.
func (c *Counter) Local(ctx *Ctx) *LocalCounter {
	return (*LocalCounter)(&c.slots[ctx.w.id].local)
}

// LocalCounter is one worker's slot of a Counter; see Counter.Local.
type LocalCounter uint64

// Inc adds one.
func (l *LocalCounter) Inc() { *l++ }

// Add adds n.
func (l *LocalCounter) Add(n uint64) { *l += LocalCounter(n) }
