package runtime

import "sync/atomic"

// latch is a one-shot flag a Join job sets when it finishes on a thief.
// set's store pairs with the joining owner's load in Ctx.Join: the job's
// result (Task.err) is written before set, so it is visible after isSet.
type latch struct{ v atomic.Uint32 }

func (l *latch) set()        { l.v.Store(1) }
func (l *latch) isSet() bool { return l.v.Load() != 0 }
func (l *latch) reset()      { l.v.Store(0) }

// doneFlag records that a Spawned task reported its outcome (Task.Done).
type doneFlag struct{ v atomic.Bool }

func (d *doneFlag) get() bool  { return d.v.Load() }
func (d *doneFlag) set(b bool) { d.v.Store(b) }

// cacheLinePad keeps fields written by different threads on different cache
// lines (64 bytes on x86-64 and most arm64 parts; 128 would cover Apple M-series
// and some POWER parts' adjacent-line prefetch too).
type cacheLinePad struct{ _ [128]byte }
