package proc

import goruntime "runtime"

// SpareProcs raises GOMAXPROCS by slots, the number of processes a
// program's runners run at once, up to doubling it, and returns the func
// that puts it back. Call it once per program, around the time its
// runners run (numasteal run does).
//
// A process task's goroutine waits for its child in a system call that
// keeps its P (the life of a process task, step 3). While every P is so
// held, Go's sysmon takes them back every 20 µs and wakes a thread to
// spin for nothing, and a slot's hand-off to a queued task wakes a
// thread for each idle P; with a P to spare for each running process it
// leaves them alone. The cap keeps the GC's workers (a quarter of
// GOMAXPROCS) few.
func SpareProcs(slots int) (restore func()) {
	n := goruntime.GOMAXPROCS(0)
	goruntime.GOMAXPROCS(n + min(max(slots, 0), n))
	return func() { goruntime.GOMAXPROCS(n) }
}
