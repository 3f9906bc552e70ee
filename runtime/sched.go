package runtime

import "sync/atomic"

// schedCounts is the parking protocol's two counts (park.go), spinning
// workers and parked workers, packed into one word: spinning in the high
// 32 bits, parked in the low 32. A worker deciding whether it may start
// spinning (rule 4: while 2*spinning < busy) thus sees both at one instant
// and claims its slot with a CAS that fails if either changed meanwhile,
// so the rule holds exactly when a spinner starts, however long the
// worker is preempted between its look and its claim. Go's runtime keeps
// two words (sched.nmspinning, sched.npidle) and accepts that race; Tokio
// packs its searching and unparked counts into one word the same way
// (runtime/scheduler/multi_thread/idle.go's State). Counts never go
// negative, so adding to one half never borrows from or carries into the
// other.
type schedCounts struct{ v atomic.Uint64 }

const spinOne = 1 << 32 // one spinning worker in the packed word

func unpackSched(v uint64) (spinning, idle int32) { return int32(v >> 32), int32(uint32(v)) }

// load returns both counts, read at one instant.
func (c *schedCounts) load() (spinning, idle int32) { return unpackSched(c.v.Load()) }

// spinning returns the number of spinning workers.
func (c *schedCounts) spinning() int32 { return int32(c.v.Load() >> 32) }

// idle returns the number of parked workers.
func (c *schedCounts) idle() int32 { return int32(uint32(c.v.Load())) }

// addSpinning adds d to the spinning count and returns the new count.
func (c *schedCounts) addSpinning(d int32) int32 {
	return int32(c.v.Add(uint64(int64(d)<<32)) >> 32)
}

// addIdle adds d to the parked count.
func (c *schedCounts) addIdle(d int32) { c.v.Add(uint64(int64(d))) }

// casSpinning sets the spinning count from old to new if it is old,
// whatever the parked count.
func (c *schedCounts) casSpinning(old, new int32) bool {
	for {
		v := c.v.Load()
		if s, _ := unpackSched(v); s != old {
			return false
		}
		if c.v.CompareAndSwap(v, v+uint64(int64(new-old)<<32)) {
			return true
		}
	}
}

// startSpinning claims a spinning slot if rule 4 allows one among
// workers: 2*spinning < workers - parked, both read with the claim.
func (c *schedCounts) startSpinning(workers int32) bool {
	for {
		v := c.v.Load()
		s, idle := unpackSched(v)
		if 2*s >= workers-idle {
			return false
		}
		if c.v.CompareAndSwap(v, v+spinOne) {
			return true
		}
	}
}
