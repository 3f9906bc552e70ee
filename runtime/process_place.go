package runtime

import "github.com/numasteal/numasteal/balance"

// pickCPU is the placement of a process task, decided at fork time by the
// worker x that runs the fork: the runtime's balancing policy places it
// (balance.PlaceExec; for Hierarchical the find_idlest_cpu walk from x's
// CPU), seeing as each CPU's load the processes this runner runs there
// plus the Go tasks queued on its worker. It returns a worker id.
//
// The runtime's own PlaceCPU sees only Go tasks: a CPU busy with a
// compiler whose worker is parked looks idle to it, so every process would
// land where the fork ran. Hence the runner's own Load.
func (r *ProcessRunner) pickCPU(x *Ctx) int {
	cpu := r.rt.pol.bal.Place(x.w.cpu, balance.PlaceExec, (*processLoad)(r))
	if w := r.rt.workerOn(cpu); w != nil {
		return w.id
	}
	return x.w.id
}

// processLoad is the balance.Load of process placement: per CPU, the
// runner's processes there and the Go tasks of its worker.
type processLoad ProcessRunner

// Queued counts what waits on cpu besides the one thing it runs: all its
// processes but one, and its worker's queued Go tasks.
func (l *processLoad) Queued(cpu int) int {
	w := l.rt.workerOn(cpu)
	if w == nil {
		return 0
	}
	q := l.rt.load().Queued(cpu)
	if n := int(l.running[w.id].Load()); n > 0 {
		q += n
		if !l.rt.load().Running(cpu) {
			q-- // one process is what cpu runs
		}
	}
	return q
}

// Running reports whether cpu runs a process of the runner or a Go task.
func (l *processLoad) Running(cpu int) bool {
	w := l.rt.workerOn(cpu)
	if w == nil {
		return false
	}
	return l.running[w.id].Load() > 0 || l.rt.load().Running(cpu)
}
