package runtime

import (
	"sync"
	"sync/atomic"
)

// Counter is a statistics counter for tasks, built the way FreeBSD's
// counter(9) is: each worker has its own small slot that only it increments,
// with a plain add, and the runtime folds the slots into a 64-bit total at
// the worker's safe points (every Config.FoldEvery tasks, before it parks,
// and whenever a slot gets large). Load returns the total, so it may lag
// the increments by at most one fold of each running worker; once the
// runtime is idle or closed it is exact.
//
// Make one with Runtime.NewCounter. Inc and Add must be called from tasks.
type Counter struct {
	rt    *Runtime
	slots []counterSlot // by worker id
}

// counterSlot is one worker's part of a Counter, alone on its cache line so
// two workers' increments never share a line.
type counterSlot struct {
	local uint32        // owner only: plain increments
	_     [60]byte      // keep total off local's line (false sharing)
	total atomic.Uint64 // owner adds at folds; Load reads
	_     [56]byte
}

// counterFoldAt folds a slot early when it reaches this value, so a single
// long task cannot overflow the 32-bit slot between safe points.
const counterFoldAt = 1 << 31

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
	s := &c.slots[ctx.w.id]
	s.local++
	if s.local >= counterFoldAt {
		s.fold()
	}
}

// Add adds n to the counter from the task running with ctx.
func (c *Counter) Add(ctx *Ctx, n uint32) {
	s := &c.slots[ctx.w.id]
	if uint64(s.local)+uint64(n) >= counterFoldAt {
		s.fold()
	}
	s.local += n
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
		s.total.Add(uint64(s.local))
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
