// Package gcfloor keeps Go's garbage collector idle while a program's heap
// is small: it aims the collector at a heap of at least a floor size, the
// way the Go compiler raises its starting heap
// (cmd/compile/internal/base.AdjustStartingHeap).
//
// With the default GOGC of 100 the collector runs whenever the heap has
// doubled since the last collection, and at the latest at 4 MiB. A
// program with a small live heap that allocates steadily, such as
// `numasteal run` spawning short processes (a few KiB of garbage each:
// the command's environment copied by os/exec, its exec.Cmd, contexts),
// then collects every few hundred tasks, and each cycle stops the world
// twice, wakes a thread per P and sweeps in the background: 35 cycles in
// 5,000 `true` at two slots (GODEBUG=gctrace=1), 4 or 5 under a 16 MiB
// floor (docs/BENCHMARKS.md, "5,000 true against make"). Above the floor
// the collector runs as GOGC says.
//
// After each collection (a finalizer re-armed every cycle) Keep sets
// GOGC to what makes the next goal the floor, or back to the program's
// GOGC once twice the live heap reaches it. A GOGC set in the environment
// is the user's choice: Keep leaves it alone.
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// Keep aims the collector at a heap of at least floor bytes until the
// returned stop is called, which puts GOGC back. It does nothing (and
// stop nothing) when the environment sets GOGC or GOGC is off.
func Keep(floor uint64) (stop func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if base <= 0 {
		return func() {}
	}
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	var stopped atomic.Bool
	adjust := func() bool {
		if stopped.Load() {
			return false
		}
		metrics.Read(samples)
		live := samples[0].Value.Uint64()
		if live == 0 { // no collection yet: what the heap holds now
			live = samples[1].Value.Uint64()
		}
		debug.SetGCPercent(percent(live, floor, base))
		return true
	}
	adjust()
	forEachGC(adjust)
	return func() {
		if stopped.CompareAndSwap(false, true) {
			debug.SetGCPercent(base)
		}
	}
}

// minHeap is the runtime's smallest goal at GOGC=100; it scales with
// GOGC (runtime/mgcpacer.go, heapMinimum).
const minHeap = 4 << 20

// percent is the GOGC that makes floor the collector's next goal for a
// heap with live bytes live, or base when base's goal is at least that.
// The goal is live × (1 + GOGC/100), and at least minHeap × GOGC/100, so
// for a tiny live heap the second sets it.
func percent(live, floor uint64, base int) int {
	live = max(live, 1<<20)
	if live*uint64(100+base)/100 >= floor {
		return base
	}
	return int(min(floor*100/live-100, floor*100/minHeap))
}

// forEachGC calls fn after each collection until it returns false: a
// finalizer on an object nothing refers to runs once a cycle has found
// it unreachable, and sets itself again on a new one.
func forEachGC(fn func() bool) {
	type sentinel [32]byte // beyond the tiny allocator, so it is freed alone
	var again func(*sentinel)
	again = func(*sentinel) {
		if fn() {
			runtime.SetFinalizer(new(sentinel), again)
		}
	}
	runtime.SetFinalizer(new(sentinel), again)
}
