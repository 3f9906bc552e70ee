package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
	"github.com/numasteal/numasteal/topology/domains"
)

// Runtime is a set of pinned workers. It is safe for use by many goroutines
// at once. Create it with New and stop it with Close.
type Runtime struct {
	cfg     Config
	log     *zap.Logger
	topo    *topology.Topology
	domains *domains.Domains
	levels  []string // names of the steal levels, index = Domain.Level.Depth

	workers []*worker
	byCPU   []*worker // CPU id -> its worker, nil where none; see workerOn
	byNode  map[int][]*worker
	nodeIDs []int // nodes that have workers, sorted

	// Idle and spinning state; see park.go for the protocol.
	idle  idleSet
	_     cacheLinePad
	sched schedCounts // spinning and parked workers (Go's sched.nmspinning, sched.npidle)
	_     cacheLinePad

	counters counterRegistry // user Counters folded by the workers
	pol      policyState     // the balancing policy (policy.go)
	busyTick int64           // Config.BalanceTick in ns, defaulted; <= 0: no periodic balancing

	seq      atomic.Uint64 // placements from an unknown CPU, for round-robin (placeFrom)
	closing  atomic.Bool   // Close has begun: injections are refused
	canceled atomic.Bool   // Close(Cancel): tasks not started are canceled
	closeMu  sync.Mutex
	closed   bool

	baseCtx    context.Context // parent of every group context; canceled by Close(Cancel)
	baseCancel context.CancelFunc

	wg        sync.WaitGroup // worker goroutines
	statsStop chan struct{}
	statsDone chan struct{}
}

// New starts the workers described by cfg and returns once every worker is
// pinned and running. It fails when the topology cannot be read, when the
// selection leaves no CPU, or when a worker cannot be pinned.
func New(cfg Config) (*Runtime, error) {
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if cfg.foldEvery <= 0 {
		cfg.foldEvery = defaultFoldEvery
	}
	switch {
	case cfg.promoteBackoff == 0:
		cfg.promoteBackoff = maxPromoteBackoff
	case cfg.promoteBackoff < 0:
		cfg.promoteBackoff = 0
	}
	topo := cfg.Topology
	if topo == nil {
		var err error
		if topo, err = topology.Discover(); err != nil {
			return nil, fmt.Errorf("runtime: %w", err)
		}
	}
	if !topo.Live {
		cfg.NoPin = true
	}
	cpus, err := selectCPUs(topo, cfg)
	if err != nil {
		return nil, err
	}
	doms, err := domains.Build(topo)
	if err != nil {
		return nil, fmt.Errorf("runtime: scheduling domains: %w", err)
	}
	rt := &Runtime{
		cfg:     cfg,
		log:     log,
		topo:    topo,
		domains: doms,
		byCPU:   make([]*worker, cpus[len(cpus)-1]+1),
		byNode:  make(map[int][]*worker),
	}
	switch {
	case cfg.BalanceTick == 0:
		rt.busyTick = int64(defaultBalanceTick)
	case cfg.BalanceTick > 0:
		rt.busyTick = int64(cfg.BalanceTick)
	}
	rt.baseCtx, rt.baseCancel = context.WithCancel(context.Background())
	for _, l := range doms.Levels {
		name := string(l.Name)
		if l.Name == domains.NUMA {
			name = fmt.Sprintf("NUMA(%d)", l.Distance)
		}
		rt.levels = append(rt.levels, name)
	}
	if len(rt.levels) == 0 {
		rt.levels = []string{string(domains.Machine)}
	}
	for i, cpu := range cpus {
		node := topo.NodeOf(cpu)
		w := newWorker(rt, i, cpu, node)
		rt.workers = append(rt.workers, w)
		rt.byCPU[cpu] = w
		if _, ok := rt.byNode[node]; !ok {
			rt.nodeIDs = append(rt.nodeIDs, node)
		}
		rt.byNode[node] = append(rt.byNode[node], w)
	}
	for _, w := range rt.workers {
		w.cnt.stolenFromBy = make([]uint32, len(rt.workers))
		w.alone = len(rt.workers) == 1
	}
	rt.idle.init(len(rt.workers))
	if err := rt.initPolicy(); err != nil {
		return nil, err
	}

	// Start the workers and wait until each is pinned (or failed to be).
	started := make(chan error, len(rt.workers))
	for _, w := range rt.workers {
		rt.wg.Add(1)
		go w.main(started)
	}
	var errs []error
	for range rt.workers {
		if err := <-started; err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		rt.shutdown(Cancel)
		return nil, fmt.Errorf("runtime: starting workers: %w", errors.Join(errs...))
	}
	log.Info("numasteal runtime started",
		zap.Int("workers", len(rt.workers)),
		zap.Stringer("cpus", cpuset.Of(cpus...)),
		zap.Ints("nodes", rt.nodeIDs),
		zap.Strings("steal_levels", rt.levels),
		zap.Bool("pinned", !cfg.NoPin))
	if cfg.StatsInterval > 0 {
		rt.statsStop, rt.statsDone = make(chan struct{}), make(chan struct{})
		go rt.logStats(cfg.StatsInterval)
	}
	return rt, nil
}

// selectCPUs applies Config.CPUs, Nodes and Workers to the usable CPUs.
func selectCPUs(topo *topology.Topology, cfg Config) ([]int, error) {
	set := topo.Usable
	if !cfg.CPUs.IsEmpty() {
		set = set.Intersect(cfg.CPUs)
	}
	if !cfg.Nodes.IsEmpty() {
		var inNodes cpuset.Set
		for _, n := range topo.Nodes {
			if cfg.Nodes.Contains(n.ID) {
				inNodes = inNodes.Union(n.Usable)
			}
		}
		set = set.Intersect(inNodes)
	}
	if set.IsEmpty() {
		return nil, fmt.Errorf("runtime: no usable CPU left (usable %q, CPUs %q, nodes %q)",
			topo.Usable, cfg.CPUs, cfg.Nodes)
	}
	cpus := set.IDs()
	if cfg.Workers > 0 && cfg.Workers < len(cpus) {
		// Spread the cap over nodes: take CPUs round-robin by node.
		perNode := map[int][]int{}
		var order []int
		for _, c := range cpus {
			n := topo.NodeOf(c)
			if _, ok := perNode[n]; !ok {
				order = append(order, n)
			}
			perNode[n] = append(perNode[n], c)
		}
		var picked cpuset.Set
		for picked.Len() < cfg.Workers {
			for _, n := range order {
				if l := perNode[n]; len(l) > 0 && picked.Len() < cfg.Workers {
					picked.Add(l[0])
					perNode[n] = l[1:]
				}
			}
		}
		cpus = picked.IDs()
	}
	return cpus, nil
}

// Context returns the runtime's own context: canceled as soon as Close
// begins in CloseMode Cancel, and once Close has finished in any mode.
// Every group's context derives from it. Work that outlives the task that
// started it (a process a task forked) watches it to end with the runtime.
func (rt *Runtime) Context() context.Context { return rt.baseCtx }

// Workers returns the number of workers.
func (rt *Runtime) Workers() int { return len(rt.workers) }

// Pinned reports whether each worker's thread is confined to its one CPU
// (Ctx.CPU) from New until Close. It is false with Config.NoPin and on a
// topology that is not the live machine, where the workers only stand for
// their CPUs; work started from a task must then not be pinned to them.
func (rt *Runtime) Pinned() bool { return !rt.cfg.NoPin }

// Topology returns the topology the runtime runs on.
func (rt *Runtime) Topology() *topology.Topology { return rt.topo }

// Group returns a new group for tasks submitted from outside the workers.
// Its context derives from ctx; the first task error cancels it.
func (rt *Runtime) Group(ctx context.Context) *Group {
	if ctx == nil {
		panic("runtime: Runtime.Group: nil context")
	}
	return &Group{rt: rt, parent: ctx}
}

// Go runs fn on a worker as a one-task group and returns that group, whose
// Wait reports fn's outcome. It is a shorthand for Group(ctx) then Go.
func (rt *Runtime) Go(ctx context.Context, fn Func) *Group {
	g := rt.Group(ctx)
	g.Go(fn)
	return g
}

// inject places t, already counted in its group, on the worker place
// chooses. It reports the task canceled when the runtime is closing.
func (rt *Runtime) inject(t *Task) {
	if rt.closing.Load() {
		rt.finish(nil, t, canceled, ErrClosed)
		return
	}
	g := t.group
	w := rt.place(g)
	if !w.inbox.push(t) {
		// The worker closed its inbox: the runtime is shutting down.
		rt.finish(nil, t, canceled, ErrClosed)
		return
	}
	rt.notifyLater(g) // a wake-up is left to a goroutine (lend.go)
}

// place returns the worker for a task of g injected by the calling
// goroutine: the policy's placement (balance.PlaceFork) from the caller's
// CPU, with the load as it is now.
func (rt *Runtime) place(g *Group) *worker {
	return rt.byCPU[rt.placeFrom(rt.injectorCPU(g), balance.PlaceFork, rt.load())]
}

// injectorCPU returns the CPU that the calling goroutine, injecting into
// g, runs on, as read at most reuseCPU injections into g ago. Reading it
// is a system call (getcpu), about 200 ns here, as much as the rest of an
// injection, and a goroutine that submits a burst stays on its CPU for
// the burst unless it blocks; the first injection after a Wait of g
// (which may block) and every reuseCPU-th one read it anew. With concurrent submitters to one group a task
// may be placed from another submitter's CPU: the placement is a
// locality hint, and the load still decides it.
func (rt *Runtime) injectorCPU(g *Group) int {
	if g.fromLeft.Add(-1) >= 0 {
		return int(g.fromCPU.Load())
	}
	cpu, _ := rt.callerCPU()
	g.fromCPU.Store(int32(cpu))
	g.fromLeft.Store(reuseCPU - 1)
	return cpu
}

// reuseCPU is how many injections into a group share one read of the
// injecting goroutine's CPU (injectorCPU).
const reuseCPU = 16

// finish reports t's outcome to its group (or its Join latch) and recycles
// runtime-owned tasks. w is the worker that ran it, nil outside workers.
func (rt *Runtime) finish(w *worker, t *Task, o outcome, err error) {
	if t.join {
		t.err, t.panicked = err, o == panicked
		if o == canceled && err == nil {
			t.err = context.Canceled
		}
		// Read joiner before the latch: once it is set the joiner may
		// recycle t. The set pairs with waitLatch's isSet; t.err is
		// visible after it.
		j := t.joiner
		t.latch.set()
		rt.unpark(j)
		return
	}
	g := t.group
	if t.pooled {
		if w != nil {
			w.freeTask(t)
		}
	} else {
		t.done.set(true)
	}
	g.report(o, err)
}

// Close stops the runtime: injections are refused from now on (their tasks
// report ErrClosed), queued tasks run (Drain) or are canceled (Cancel)
// according to Config.CloseMode, and Close returns when every worker has
// exited. Calling Close again does nothing and returns nil.
func (rt *Runtime) Close() error {
	return rt.shutdown(rt.cfg.CloseMode)
}

func (rt *Runtime) shutdown(mode CloseMode) error {
	rt.closeMu.Lock()
	defer rt.closeMu.Unlock()
	if rt.closed {
		return nil
	}
	rt.closed = true
	start := time.Now()
	if mode == Cancel {
		rt.canceled.Store(true)
		rt.baseCancel()
	}
	rt.closing.Store(true)
	rt.wakeAll()
	rt.wg.Wait()
	rt.baseCancel()
	if rt.statsStop != nil {
		close(rt.statsStop)
		<-rt.statsDone
	}
	if len(rt.workers) > 0 {
		s := rt.Stats()
		rt.log.Info("numasteal runtime stopped",
			zap.Duration("close", time.Since(start)),
			zap.Uint64("tasks_run", s.Total.TasksRun),
			zap.Uint64("steals", s.Total.stealsTotal()))
	}
	return nil
}

func (rt *Runtime) logStats(every time.Duration) {
	defer close(rt.statsDone)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-rt.statsStop:
			return
		case <-tick.C:
			s := rt.Stats()
			rt.log.Info("numasteal stats",
				zap.Uint64("tasks_run", s.Total.TasksRun),
				zap.Uint64("spawned", s.Total.Spawned),
				zap.Uint64("injected", s.Total.Injected),
				zap.Uint64s("steals_per_level", s.Total.Steals),
				zap.Uint64s("failed_steals_per_level", s.Total.FailedSteals),
				zap.Uint64s("pulls_per_level", s.Total.Pulls),
				zap.Uint64("hot_refusals", s.Total.HotRefusals),
				zap.Uint64("parks", s.Total.Parks))
		}
	}
}

// workerOn returns the worker on cpu, or nil when cpu has none.
func (rt *Runtime) workerOn(cpu int) *worker {
	if cpu < 0 || cpu >= len(rt.byCPU) {
		return nil
	}
	return rt.byCPU[cpu]
}

// callerCPU returns the CPU and node the calling goroutine runs on, or -1
// for both when unknown (an unpinned runtime stands for other CPUs).
func (rt *Runtime) callerCPU() (cpu, node int) {
	if !rt.cfg.NoPin {
		if cpu, node, err := affinity.CurrentCPU(); err == nil {
			return cpu, node
		}
	}
	return -1, -1
}

func (rt *Runtime) isClosing() bool { return rt.closing.Load() }
