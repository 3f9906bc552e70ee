package runtime

import "sync/atomic"

// defaultFoldEvery is how many tasks a worker runs between two folds of
// its counters: a guess that spreads a fold's dozen atomic adds thinly
// (about a nanosecond per task or less) and keeps Stats fresh.
const defaultFoldEvery = 256

// Statistics, the counter(9) way.
//
// Each worker counts in plain 32-bit fields that only it ever reads or
// writes (counters), so an increment is an ordinary add to a line in the
// worker's own cache: no lock prefix, no sharing. At safe points — every
// defaultFoldEvery tasks and before it parks — the worker folds them into
// 64-bit atomic totals (totals) and zeroes them. Stats reads only the
// totals, never another worker's plain counters, which would be a data race
// (the FreeBSD counter(9) thread's point: reading other CPUs' counters races;
// fold them instead). A snapshot is therefore at most one fold behind each
// running worker, and exact for parked ones. 32 bits cannot overflow
// between folds: a fold happens at least every defaultFoldEvery tasks, and
// a worker that runs no task parks (and folds) after at most a few rounds
// of steal attempts, each adding a handful of counts.
//
// "Stolen from" is counted by the thief (it is the thief's event), per
// victim, and folded into the victim's total.
type counters struct {
	run, spawned, injected  uint32
	parks, wakeups          uint32
	lent                    uint32   // lends to outside waiters (lend.go)
	steals, failedSteals    []uint32 // per domain level
	crossSteals, crossTasks uint32   // steals from a worker on another node; tasks steals and pulls moved across nodes
	pulls                   []uint32 // periodic balancing moves, per domain level
	pulled, crossPulls      uint32   // tasks periodic balancing moved; its moves from another node
	hotRefusals             uint32   // periodic moves refused because the task was cache-hot
	stolenFromBy            []uint32 // per victim worker id
	touched                 []int32  // victim ids with a nonzero stolenFromBy
	// Joins and their promotions (promote.go): 64 bits, since a long
	// inline recursion forks without running a task, so without a fold.
	forks, promoted uint64
}

func (c *counters) init(levels int) {
	c.steals = make([]uint32, levels)
	c.failedSteals = make([]uint32, levels)
	c.pulls = make([]uint32, levels)
}

// stolenFrom counts n tasks taken from victim id by one steal.
func (c *counters) stolenFrom(id, n int) {
	if c.stolenFromBy[id] == 0 {
		c.touched = append(c.touched, int32(id))
	}
	c.stolenFromBy[id] += uint32(n)
}

// totals are a worker's folded counts. The owner adds; Stats loads.
type totals struct {
	run, spawned, injected  atomic.Uint64
	parks, wakeups          atomic.Uint64
	lent                    atomic.Uint64
	stolenFrom              atomic.Uint64 // added by thieves' folds
	crossSteals, crossTasks atomic.Uint64
	pulled, crossPulls      atomic.Uint64
	hotRefusals             atomic.Uint64
	forks, promoted         atomic.Uint64
	steals, failedSteals    []atomic.Uint64
	pulls                   []atomic.Uint64
}

func (t *totals) init(levels int) {
	t.steals = make([]atomic.Uint64, levels)
	t.failedSteals = make([]atomic.Uint64, levels)
	t.pulls = make([]atomic.Uint64, levels)
}

// fold adds the plain counters into the totals and zeroes them. Owner only.
func (w *worker) fold() {
	c, t := &w.cnt, &w.tot
	w.sinceFold = 0
	addZero(&t.run, &c.run)
	addZero(&t.spawned, &c.spawned)
	addZero(&t.injected, &c.injected)
	addZero(&t.parks, &c.parks)
	addZero(&t.wakeups, &c.wakeups)
	addZero(&t.lent, &c.lent)
	addZero(&t.crossSteals, &c.crossSteals)
	addZero(&t.crossTasks, &c.crossTasks)
	addZero(&t.pulled, &c.pulled)
	addZero(&t.crossPulls, &c.crossPulls)
	addZero(&t.hotRefusals, &c.hotRefusals)
	addZero64(&t.forks, &c.forks)
	addZero64(&t.promoted, &c.promoted)
	for i := range c.steals {
		addZero(&t.steals[i], &c.steals[i])
		addZero(&t.failedSteals[i], &c.failedSteals[i])
		addZero(&t.pulls[i], &c.pulls[i])
	}
	for _, id := range c.touched {
		w.rt.workers[id].tot.stolenFrom.Add(uint64(c.stolenFromBy[id]))
		c.stolenFromBy[id] = 0
	}
	c.touched = c.touched[:0]
	w.foldCounters()
}

func addZero(t *atomic.Uint64, c *uint32) {
	if *c != 0 {
		t.Add(uint64(*c))
		*c = 0
	}
}

func addZero64(t *atomic.Uint64, c *uint64) {
	if *c != 0 {
		t.Add(*c)
		*c = 0
	}
}

// Stats is a snapshot of the runtime's counters.
type Stats struct {
	// Levels names the steal levels, innermost first (e.g. "SMT", "LLC",
	// "NUMA(20)"); Steals, FailedSteals and Pulls are indexed the same way.
	Levels []string
	// Workers has one entry per worker, by id.
	Workers []WorkerStats
	// Total sums Workers.
	Total WorkerStats
	// Parked and Spinning are how many workers are parked, and how many
	// are searching for work (park.go's nmspinning), at the moment of the
	// snapshot: gauges, not counts. Both come from one load.
	Parked, Spinning int
}

// WorkerStats are one worker's counts (or a sum, in Stats.Total).
type WorkerStats struct {
	ID, CPU, Node int // -1 in Stats.Total
	TasksRun      uint64
	Spawned       uint64 // tasks pushed to its deque or LIFO slot, promoted forks included
	// Forks counts its Joins (Ctx.Join, Jobs.Join, ParallelFor's splits)
	// and Promoted those whose second half it pushed to its deque for
	// thieves (promote.go); the rest ran as plain calls.
	Forks, Promoted uint64
	Injected        uint64 // injected tasks it took from an inbox
	// StolenFrom counts the tasks other workers stole from it: a batch
	// steal (balance.Victim.Max > 1) counts every task it moved, so it
	// can exceed the thieves' Steals, which count steal operations.
	StolenFrom uint64
	Parks      uint64
	Wakeups    uint64
	// Lent counts the times an outside goroutine waiting in Group.Wait
	// ran its group's tasks as this worker while the worker's thread
	// stayed parked (lend.go).
	Lent         uint64
	Steals       []uint64 // successful steal operations per level
	FailedSteals []uint64 // level scans that found nothing, per level
	// CrossNodeSteals counts its steals from a worker on another NUMA
	// node; CrossNodeMigrations the tasks its steals and pulls moved
	// from another node (a batch moves several).
	CrossNodeSteals     uint64
	CrossNodeMigrations uint64
	// Pulls counts periodic balancing moves per level (balance.Busy: a
	// busy worker with an empty queue pulling from a busier group;
	// periodic.go), PulledTasks the tasks they moved, CrossNodePulls the
	// moves from another node, and HotRefusals the moves refused because
	// the task was cache-hot (balance.Thief.MayMigrate).
	Pulls          []uint64
	PulledTasks    uint64
	CrossNodePulls uint64
	HotRefusals    uint64
}

func (s *WorkerStats) stealsTotal() uint64 {
	var n uint64
	for _, v := range s.Steals {
		n += v
	}
	return n
}

// Stats returns the folded counters: each running worker's counts are at
// most one fold (defaultFoldEvery tasks) behind.
func (rt *Runtime) Stats() Stats {
	n := len(rt.levels)
	spinning, parked := rt.sched.load()
	s := Stats{
		Parked:   int(parked),
		Spinning: int(spinning),
		Levels:   append([]string(nil), rt.levels...),
		Workers:  make([]WorkerStats, len(rt.workers)),
		Total: WorkerStats{ID: -1, CPU: -1, Node: -1,
			Steals: make([]uint64, n), FailedSteals: make([]uint64, n), Pulls: make([]uint64, n)},
	}
	for i, w := range rt.workers {
		t := &w.tot
		ws := WorkerStats{
			ID: w.id, CPU: w.cpu, Node: w.node,
			TasksRun:            t.run.Load(),
			Spawned:             t.spawned.Load(),
			Injected:            t.injected.Load(),
			StolenFrom:          t.stolenFrom.Load(),
			Parks:               t.parks.Load(),
			Wakeups:             t.wakeups.Load(),
			Lent:                t.lent.Load(),
			CrossNodeSteals:     t.crossSteals.Load(),
			CrossNodeMigrations: t.crossTasks.Load(),
			PulledTasks:         t.pulled.Load(),
			CrossNodePulls:      t.crossPulls.Load(),
			HotRefusals:         t.hotRefusals.Load(),
			Forks:               t.forks.Load(),
			Promoted:            t.promoted.Load(),
			Steals:              make([]uint64, n),
			FailedSteals:        make([]uint64, n),
			Pulls:               make([]uint64, n),
		}
		for l := range n {
			ws.Steals[l] = t.steals[l].Load()
			ws.FailedSteals[l] = t.failedSteals[l].Load()
			ws.Pulls[l] = t.pulls[l].Load()
		}
		s.Workers[i] = ws
		tt := &s.Total
		tt.TasksRun += ws.TasksRun
		tt.Spawned += ws.Spawned
		tt.Injected += ws.Injected
		tt.StolenFrom += ws.StolenFrom
		tt.Parks += ws.Parks
		tt.Wakeups += ws.Wakeups
		tt.Lent += ws.Lent
		tt.CrossNodeSteals += ws.CrossNodeSteals
		tt.CrossNodeMigrations += ws.CrossNodeMigrations
		tt.PulledTasks += ws.PulledTasks
		tt.CrossNodePulls += ws.CrossNodePulls
		tt.HotRefusals += ws.HotRefusals
		tt.Forks += ws.Forks
		tt.Promoted += ws.Promoted
		for l := range n {
			tt.Steals[l] += ws.Steals[l]
			tt.FailedSteals[l] += ws.FailedSteals[l]
			tt.Pulls[l] += ws.Pulls[l]
		}
	}
	return s
}
