package runtime

import (
	"fmt"
	"time"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// Balancing policy (package balance) in the runtime.
//
// The policy decides three things: whom an idle worker robs (steal, in
// the order of its Thief's steps, nearest domain first), how much it takes
// (Victim.Max: one task with Steal, more with StealHalf), and where an
// injected task or a new process lands (the Balancer's Place, through
// Runtime.Place).
// Workers balance when they run out of work (steal: balance.NewlyIdle on
// the first pass, balance.Idle on the passes of a worker still searching)
// and periodically while busy (periodic.go: balance.Busy, with the
// policy's cache-hot test), the modes Linux's load balancer has.
//
// Liveness. The parking protocol (park.go) assumes that a spinning worker
// takes any queued work it sees; a policy may refuse some on purpose
// (Hierarchical leaves a group with idle CPUs to those CPUs, Local never
// leaves its node), and unlike an idle kernel CPU a parked worker does not
// balance by itself. Two rules keep work from being stranded:
//
//  1. The last of a worker's four steal attempts passes Search.Final: the
//     policy drops its gates (intervals, should_we_balance, imbalance_pct)
//     and keeps only its reach; Local's reach on that pass also covers
//     queues whose owner runs nothing.
//  2. A spinner that still found nothing it may take passes its spinning
//     slot to a parked worker nearer to the work (handOff): the owner of
//     the queue if it is parked, else the parked worker nearest to it in
//     the domain hierarchy. The number of spinners is unchanged.
//
// Hot path: the Thief and its victim buffer (sized MaxVictims) are made
// once per worker in New, and the Load the policy reads is a pointer to the
// runtime, so a steal attempt allocates nothing.

// policyState is the runtime's binding of its balance.Policy.
type policyState struct {
	policy  balance.Policy
	bal     balance.Balancer
	start   time.Time // origin of Search.Now
	thieves []workerThief
}

// workerThief is one worker's policy state. Owner only.
type workerThief struct {
	th  balance.Thief
	buf []balance.Victim
	_   cacheLinePad
}

// runtimeLoad is the balance.Load the runtime shows its policy: queue
// lengths and busy flags, read with atomic loads (approximate).
type runtimeLoad Runtime

// Queued returns the number of tasks waiting in cpu's worker: deque, inbox
// and LIFO slot.
func (l *runtimeLoad) Queued(cpu int) int {
	w := (*Runtime)(l).workerOn(cpu)
	if w == nil {
		return 0
	}
	q := w.stealQ.Len() + int(w.inbox.size.Load())
	if w.lifo.Load() != nil {
		q++
	}
	return q
}

// Running reports whether cpu's worker is running a task.
func (l *runtimeLoad) Running(cpu int) bool {
	w := (*Runtime)(l).workerOn(cpu)
	return w != nil && w.busy.Load()
}

func (rt *Runtime) load() *runtimeLoad { return (*runtimeLoad)(rt) }

// Load returns the load the balancing policy sees: for each worker's CPU
// the Go tasks queued on its worker (deque, inbox and LIFO slot) and
// whether it runs one; a CPU without a worker has none. The answers are
// read with atomic loads and may be stale by the time they return. A
// launcher of other work adds its own to this and passes the sum to Place
// (package proc counts its processes so). Safe for concurrent use.
func (rt *Runtime) Load() balance.Load { return rt.load() }

// initPolicy binds Config.Policy (nil: balance.Default()) to the workers'
// CPUs. Called by New once the workers exist.
func (rt *Runtime) initPolicy() error {
	p := rt.cfg.Policy
	if p == nil {
		p = balance.Default()
	}
	var cpus cpuset.Set
	for _, w := range rt.workers {
		cpus.Add(w.cpu)
	}
	bal, err := p.Bind(rt.topo, rt.domains, cpus, 0)
	if err != nil {
		return fmt.Errorf("runtime: policy %s: %w", p.Name(), err)
	}
	ps := &rt.pol
	ps.policy, ps.bal, ps.start = p, bal, time.Now()
	ps.thieves = make([]workerThief, len(rt.workers))
	for i, w := range rt.workers {
		th := bal.Thief(w.cpu)
		if th == nil {
			return fmt.Errorf("runtime: policy %s: no balancing state for CPU %d", p.Name(), w.cpu)
		}
		ps.thieves[i] = workerThief{th: th, buf: make([]balance.Victim, 0, bal.MaxVictims())}
	}
	return nil
}

// Place returns the CPU where a new piece of work of the given kind
// should start, by the balancing policy's placement (for Hierarchical the
// find_idlest_cpu walk) from CPU from, seeing load (nil: the runtime's
// own, Load). from is the CPU the work comes from, the running task's
// Ctx.CPU say; when it is not a worker's CPU (-1: unknown) the workers'
// CPUs take turns as the starting point. The answer is always a worker's
// CPU. Injected tasks are placed so with balance.PlaceFork; package proc
// places each process with balance.PlaceExec and a load that counts its
// processes. Safe for concurrent use.
func (rt *Runtime) Place(from int, kind balance.PlaceKind, load balance.Load) int {
	if load == nil {
		load = rt.load()
	}
	return rt.placeFrom(from, kind, load)
}

// placeFrom runs the policy's Place from CPU from (not a worker's CPU: a
// worker's CPU in turn) and falls back to from when the policy answers a
// CPU without a worker.
func (rt *Runtime) placeFrom(from int, kind balance.PlaceKind, load balance.Load) int {
	if rt.workerOn(from) == nil {
		from = rt.workers[rt.seq.Add(1)%uint64(len(rt.workers))].cpu
	}
	cpu := rt.pol.bal.Place(from, kind, load)
	if rt.workerOn(cpu) == nil {
		return from
	}
	return cpu
}

// handOff is called by a spinning worker whose search found nothing it
// may take. A policy may leave visible work alone on purpose: Hierarchical
// leaves a group that has idle CPUs to those CPUs (find_busiest_group's
// group_has_spare), Local never leaves its node. But the parking protocol
// relies on a spinner to take queued work (park.go: notify wakes nobody
// while one spins), and a parked worker does not balance, unlike an idle
// kernel CPU; a worker can even be parked with work in its inbox (an
// injection woke another worker). So before w parks it passes its
// spinning slot on: to the owner of queued work if that one is parked,
// else to the parked worker nearest to the owner in the domain hierarchy,
// provided it is nearer than w (so the slot never moves away from the
// work, and cannot cycle). The number of spinners does not change
// (park.go's rule 4 holds), only who spins. Cold path: it runs only when
// a search failed and some worker is parked. Owner only.
func (rt *Runtime) handOff(w *worker) {
	if !w.spinning || rt.sched.idle() == 0 {
		return
	}
	for _, v := range rt.workers {
		if v != w && v.hasLocalWork() && rt.passSpinning(w, v) {
			return
		}
	}
}

// passSpinning unparks v, or when v is not parked the parked worker
// nearest to v (most recently parked among equals) if it is nearer to v
// than w is, as a spinner in w's place: w stops spinning without giving
// back its count in nSpinning, which the woken worker inherits (as
// wakeOne(true) hands a notifier's count). It reports false when it woke
// nobody.
func (rt *Runtime) passSpinning(w, v *worker) bool {
	chain := rt.domains.Chain(v.cpu)
	// dist is the depth of v's innermost domain holding u, len(chain)+1
	// for none.
	dist := func(u *worker) int {
		for j := range chain {
			if chain[j].Span.Contains(u.cpu) {
				return j
			}
		}
		return len(chain) + 1
	}
	rt.idle.mu.Lock()
	target := v
	if !v.parked {
		target = nil
		best := dist(w)
		for i := len(rt.idle.stack) - 1; i >= 0; i-- {
			if u := rt.idle.stack[i]; u != w {
				if d := dist(u); d < best {
					target, best = u, d
				}
			}
		}
	}
	if target == nil {
		rt.idle.mu.Unlock()
		return false
	}
	rt.removeIdle(target)
	ch := target.wake
	rt.idle.mu.Unlock()
	w.spinning = false
	ch <- true
	return true
}
