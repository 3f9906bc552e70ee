package proc

import (
	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/balance"
)

// pickCPU is the placement of a process task, decided at fork time by the
// goroutine that forks it: the runtime's balancing policy places it
// (balance.PlaceExec; for Hierarchical the find_idlest_cpu walk from the
// CPU the goroutine runs on), seeing as each CPU's load the processes this
// runner runs there plus the Go tasks queued on its worker. It returns a
// worker's CPU.
//
// The runtime's own Load sees only Go tasks: a CPU busy with a compiler
// whose worker is parked looks idle to it, so every process would land
// where the fork ran. Hence the runner's own Load.
func (r *Runner) pickCPU() int {
	from, _, err := affinity.CurrentCPU()
	if err != nil {
		from = -1 // the runtime starts from each worker's CPU in turn
	}
	return r.rt.Place(from, balance.PlaceExec, (*processLoad)(r))
}

// processLoad is the balance.Load of process placement: per CPU, the
// runner's processes there and the Go tasks of its worker.
type processLoad Runner

// Queued counts what waits on cpu besides the one thing it runs: all its
// processes but one, and its worker's queued Go tasks.
func (l *processLoad) Queued(cpu int) int {
	q := l.goLoad.Queued(cpu)
	if n := int((*Runner)(l).processesOn(cpu)); n > 0 {
		q += n
		if !l.goLoad.Running(cpu) {
			q-- // one process is what cpu runs
		}
	}
	return q
}

// Running reports whether cpu runs a process of the runner or a Go task.
func (l *processLoad) Running(cpu int) bool {
	return (*Runner)(l).processesOn(cpu) > 0 || l.goLoad.Running(cpu)
}

// processesOn returns the number of the runner's processes running on cpu.
func (r *Runner) processesOn(cpu int) int32 {
	if cpu < 0 || cpu >= len(r.running) {
		return 0
	}
	return r.running[cpu].Load()
}
