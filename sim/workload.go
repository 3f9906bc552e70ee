package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/numasteal/numasteal/balance"
)

// simWorkload generates tasks and reacts to their completion.
type simWorkload interface {
	params() simParams
	// start registers every task with e.addTask and releases the first.
	start(e *simEngine)
	// finished reacts to t finishing on position p.
	finished(e *simEngine, t *simTask, p int)
}

// simParams are a workload's time scales.
type simParams struct {
	refillNs             float64 // default cache-refill penalty
	pollMinNs, pollMaxNs float64 // idle poll back-off
	tickNs               float64 // periodic (busy) balancing period
	// fifo: a CPU runs its queued tasks oldest first (processes on a run
	// queue); otherwise newest first (a work-stealing deque). Thieves take
	// the oldest either way: the top of the deque, and the tail of
	// cfs_tasks where Linux's detach_tasks starts (tasks enter at its
	// head).
	fifo bool
}

func newSimWorkload(name string, ncpu int, seed uint64) (simWorkload, error) {
	r := rand.New(rand.NewPCG(seed, seed^0x5DEECE66D))
	switch name {
	case "forkjoin":
		return newForkJoinSim(ncpu, r), nil
	case "kernbench":
		return newKernbenchSim(ncpu, r), nil
	case "sdet":
		return newSDETSim(ncpu, r), nil
	}
	return nil, fmt.Errorf("sim: unknown workload %q (known: kernbench, forkjoin, sdet)", name)
}

// forkJoinSim is a binary fork-join tree: each inner task forks two
// children onto its CPU's deque, and when both subtrees are done a join
// task (the continuation) runs on the CPU that finished the last one. The
// root starts on the first CPU; a child's data lives on the node of the CPU
// that forked it, in that CPU's cache.
type forkJoinSim struct {
	depth  int
	r      *rand.Rand
	leafNs float64
}

const (
	fjFork uint8 = iota
	fjLeaf
	fjJoin
)

func newForkJoinSim(ncpu int, r *rand.Rand) *forkJoinSim {
	// About 64 leaves per CPU, so there is parallel slack to steal.
	d := 1
	for 1<<d < 64*ncpu {
		d++
	}
	return &forkJoinSim{depth: d, r: r, leafNs: 50e3}
}

func (w *forkJoinSim) params() simParams {
	return simParams{refillNs: 5e3, pollMinNs: 1e3, pollMaxNs: 32e3, tickNs: 200e3}
}

func (w *forkJoinSim) start(e *simEngine) {
	leaves := 1 << w.depth
	for range 3*leaves - 2 { // forks + leaves + joins
		e.addTask()
	}
	root := w.node(0, nil, -1, -1)
	e.push(0, root)
	e.dispatch(0, balance.NewlyIdle)
}

func (w *forkJoinSim) node(depth int, parent *simTask, home, creator int) *simTask {
	t := &simTask{home: home, lastCPU: creator, lastRan: -1, a: int32(depth), parent: parent}
	if depth == w.depth {
		t.kind = fjLeaf
		t.work = w.leafNs * (0.5 + w.r.Float64())
	} else {
		t.kind = fjFork
		t.work = 1e3
		t.pending = 2
	}
	return t
}

func (w *forkJoinSim) finished(e *simEngine, t *simTask, p int) {
	c := &e.cpus[p]
	switch t.kind {
	case fjFork:
		d := int(t.a) + 1
		// Right first, so the owner pops the left child next and thieves
		// take the right one, the oldest.
		right := w.node(d, t, c.node, c.id)
		left := w.node(d, t, c.node, c.id)
		e.push(p, right)
		e.push(p, left)
		return
	case fjJoin:
		t = t.parent // the fork whose continuation just ran
	}
	w.complete(e, t.parent, p)
}

// complete counts one finished subtree of fork f; the last one queues f's
// join on p.
func (w *forkJoinSim) complete(e *simEngine, f *simTask, p int) {
	if f == nil {
		return
	}
	if f.pending--; f.pending > 0 {
		return
	}
	c := &e.cpus[p]
	j := &simTask{kind: fjJoin, work: 1e3, home: f.home, lastCPU: c.id, lastRan: -1, parent: f}
	e.push(p, j)
}

// kernbenchSim is a parallel kernel-style build driven by make
// -j(kbJobsPerCPU × CPUs): ~500 compiles whose durations follow a real
// build's spread (git's: min 0.07s, median 0.46s, p90 1.4s, max 8s;
// lognormal with μ = ln 0.46, σ = 0.869, clamped), then 8 partial links
// each needing an eighth of the objects, then a final link. make places
// each job (an exec) from the CPU whose job just finished, where it was
// woken.
type kernbenchSim struct {
	jobs    []kbJob
	ready   []int
	running int
	slots   int
}

type kbJob struct {
	ns      float64
	waiting int   // unfinished prerequisites
	next    []int // jobs that wait for this one
}

const kbCompiles, kbLinks = 500, 8

// kbJobsPerCPU is make -j (kbJobsPerCPU × CPUs): kernbench's "optimal" run.
const kbJobsPerCPU = 4

func newKernbenchSim(ncpu int, r *rand.Rand) *kernbenchSim {
	w := &kernbenchSim{slots: kbJobsPerCPU * ncpu}
	mu, sigma := math.Log(0.46), math.Log(1.4/0.46)/1.2816
	for i := range kbCompiles {
		s := math.Exp(mu + sigma*r.NormFloat64())
		switch i {
		case 0:
			s = 8 // the one big file
		case 1:
			s = 0.07
		}
		s = min(max(s, 0.07), 8)
		w.jobs = append(w.jobs, kbJob{ns: s * 1e9})
	}
	r.Shuffle(kbCompiles, func(i, j int) { w.jobs[i], w.jobs[j] = w.jobs[j], w.jobs[i] })
	final := kbCompiles + kbLinks
	for range kbLinks {
		w.jobs = append(w.jobs, kbJob{ns: (0.3 + 0.7*r.Float64()) * 1e9, next: []int{final}})
	}
	w.jobs = append(w.jobs, kbJob{ns: 2.5e9, waiting: kbLinks})
	for i := range kbCompiles {
		l := kbCompiles + i*kbLinks/kbCompiles
		w.jobs[i].next = []int{l}
		w.jobs[l].waiting++
	}
	for i := range kbCompiles {
		w.ready = append(w.ready, i)
	}
	return w
}

func (w *kernbenchSim) params() simParams {
	return simParams{refillNs: 0, pollMinNs: 100e3, pollMaxNs: 4e6, tickNs: 4e6, fifo: true}
}

func (w *kernbenchSim) start(e *simEngine) {
	for range w.jobs {
		e.addTask()
	}
	w.launch(e, e.cpus[0].id)
}

// launch starts ready jobs while make has free slots.
func (w *kernbenchSim) launch(e *simEngine, from int) {
	for w.running < w.slots && len(w.ready) > 0 {
		j := w.ready[0]
		w.ready = w.ready[1:]
		w.running++
		e.place(from, balance.PlaceExec, &simTask{work: w.jobs[j].ns, home: -1, lastCPU: -1, lastRan: -1, a: int32(j)})
	}
}

func (w *kernbenchSim) finished(e *simEngine, t *simTask, p int) {
	w.running--
	for _, n := range w.jobs[t.a].next {
		if w.jobs[n].waiting--; w.jobs[n].waiting == 0 {
			w.ready = append(w.ready, n)
		}
	}
	w.launch(e, e.cpus[p].id)
}

// sdetSim is SDET-like: 2×CPUs concurrent scripts, each a shell running 40
// short commands one after another (lognormal, median 2ms, clamped to
// 0.1ms–40ms). The first command of every script is forked from the first
// CPU; each next one is exec'd from the CPU where the previous ran, and its
// data (the shell's) lives on the script's first node and in the previous
// command's cache, so moving it costs a refill.
type sdetSim struct {
	scripts [][]float64
}

const sdetCommands = 40

func newSDETSim(ncpu int, r *rand.Rand) *sdetSim {
	w := &sdetSim{}
	for range 2 * ncpu {
		var cmds []float64
		for range sdetCommands {
			s := math.Exp(math.Log(2e-3) + 1.0*r.NormFloat64())
			cmds = append(cmds, min(max(s, 0.1e-3), 40e-3)*1e9)
		}
		w.scripts = append(w.scripts, cmds)
	}
	return w
}

func (w *sdetSim) params() simParams {
	return simParams{refillNs: 200e3, pollMinNs: 50e3, pollMaxNs: 4e6, tickNs: 4e6, fifo: true}
}

func (w *sdetSim) start(e *simEngine) {
	for _, s := range w.scripts {
		for range s {
			e.addTask()
		}
	}
	from := e.cpus[0].id
	for i, s := range w.scripts {
		e.place(from, balance.PlaceFork, &simTask{work: s[0], home: -1, lastCPU: from, lastRan: -1, a: int32(i)})
	}
}

func (w *sdetSim) finished(e *simEngine, t *simTask, p int) {
	s, k := int(t.a), int(t.b)+1
	if k >= len(w.scripts[s]) {
		return
	}
	c := &e.cpus[p]
	e.place(c.id, balance.PlaceExec, &simTask{work: w.scripts[s][k], home: t.home, lastCPU: c.id, lastRan: e.now, a: t.a, b: int32(k)})
}
