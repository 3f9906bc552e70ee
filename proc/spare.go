package proc

import goruntime "runtime"

// SpareProcs raises GOMAXPROCS by slots, the number of processes a
// program's runners run at once, up to doubling it, and returns the func
// that puts it back. Call it around the time the runners run, not once
// per runner: numasteal run calls it once, bench sdet around each
// measurement of its runner. Each call and restore changes GOMAXPROCS,
// which stops the world.
//
// A process task's goroutine waits for its child in a system call that
// keeps its P (the life of a process task, step 3). While every P is so
// held, Go's sysmon takes them back, polling every 20 µs, and each P it
// takes back wakes a thread to spin for nothing; with a P to spare for
// each running process it leaves a wait alone for 10 ms. The cap keeps
// the GC's workers (a quarter of GOMAXPROCS) few.
func SpareProcs(slots int) (restore func()) {
	n := goruntime.GOMAXPROCS(0)
	goruntime.GOMAXPROCS(n + min(max(slots, 0), n))
	return func() { goruntime.GOMAXPROCS(n) }
}
