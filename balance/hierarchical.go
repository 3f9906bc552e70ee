package balance

import (
	"time"

	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
	"github.com/numasteal/numasteal/topology/domains"
)

// HierarchicalConfig tunes Hierarchical. Zero fields mean the defaults.
type HierarchicalConfig struct {
	// IntervalUnit is what one millisecond of Linux's balance intervals
	// (min_interval = span weight ms, max_interval = 2 × span weight ms)
	// becomes here. A user-space steal costs far less than a kernel
	// rebalance, and a long unit makes nodes that found their NUMA level
	// balanced at the start of a fork-join wait out the interval while
	// work piles up elsewhere; the default, 250ns, is chosen in the
	// simulator (docs/BENCHMARKS.md, "balance interval"). A 128-CPU level
	// then waits 32µs to 64µs after finding itself balanced.
	IntervalUnit time.Duration
	// MigrationCost is sysctl_sched_migration_cost: a task that ran less
	// than this long ago is cache-hot. Default 500µs.
	MigrationCost time.Duration
	// StealLocal is the most tasks one steal takes inside the LLC.
	// Default 1.
	StealLocal int
	// StealGrowth multiplies the steal amount for each level beyond the
	// LLC (HotSLAW: steal more the farther the victim). Default 2.
	StealGrowth int
	// StealCap bounds the steal amount. Default 64.
	StealCap int
}

func (c *HierarchicalConfig) defaults() {
	if c.IntervalUnit <= 0 {
		c.IntervalUnit = 250 * time.Nanosecond
	}
	if c.MigrationCost <= 0 {
		c.MigrationCost = 500 * time.Microsecond
	}
	if c.StealLocal <= 0 {
		c.StealLocal = 1
	}
	if c.StealGrowth <= 0 {
		c.StealGrowth = 2
	}
	if c.StealCap <= 0 {
		c.StealCap = 64
	}
}

// Hierarchical balances along the scheduling domains the way Linux's
// load_balance does, adapted to work stealing:
//
//   - An idle CPU walks its domains innermost first. At each it computes
//     the load of each group (find_busiest_group, update_sg_lb_stats), the
//     loads smoothed per CPU like the old cpu_load[]: (old + nr*128)/2, a
//     busiest group read low (source_load: the smaller of smoothed and
//     instantaneous) and the local group high (target_load), and steals
//     from the busiest group's busiest CPUs only when
//     100*busiest > imbalance_pct*local.
//   - Levels that cross NUMA nodes are tried only after the nearer ones
//     found nothing, only when their balance interval has expired (it
//     doubles while the level is found balanced, up to max_interval, and
//     stretches by busy_factor while the CPU is busy), and only by one CPU
//     of the local group: the first idle one (should_we_balance).
//   - A steal takes StealLocal tasks inside the LLC and StealGrowth times
//     more per level beyond it (HotSLAW).
//   - Periodic balancing leaves cache-hot tasks (ran within MigrationCost)
//     alone until the level failed more than cache_nice_tries times. A
//     failure is a periodic pass (Idle or Busy) that found an imbalance
//     and moved nothing; newly idle passes do not count, and a pass that
//     finds the level balanced or moves work clears the count, as
//     load_balance keeps nr_balance_failed.
//   - Place walks down from the highest level that balances on fork or
//     exec (find_idlest_cpu), choosing the idlest group (find_idlest_group)
//     and then its idlest CPU, and stays in the local group unless the
//     gain beats half the level's imbalance margin; at NUMA levels it stays
//     while the local group has an idle CPU.
//
// The zero Hierarchical is valid and has the default settings, the same as
// NewHierarchical(HierarchicalConfig{}).
type Hierarchical struct{ cfg HierarchicalConfig }

// NewHierarchical returns the policy with cfg (zero fields: defaults).
func NewHierarchical(cfg HierarchicalConfig) *Hierarchical {
	return &Hierarchical{cfg: cfg}
}

// Name returns "hierarchical".
func (h *Hierarchical) Name() string { return "hierarchical" }

// Config returns the settings in use, defaults filled in.
func (h *Hierarchical) Config() HierarchicalConfig {
	cfg := h.cfg
	cfg.defaults()
	return cfg
}

// Bind prepares the policy for cpus of topo.
func (h *Hierarchical) Bind(topo *topology.Topology, doms *domains.Domains, cpus cpuset.Set, seed uint64) (Balancer, error) {
	m, err := newMachine(topo, doms, cpus)
	if err != nil {
		return nil, err
	}
	cfg := h.Config()
	b := &hierBalancer{m: m, cfg: cfg, thieves: make([]hierThief, len(m.cpus))}
	for i, c := range m.cpus {
		steps := m.steps[i]
		t := &b.thieves[i]
		*t = hierThief{
			b: b, cpu: c, pos: i, steps: steps,
			smooth:   make([]int64, len(m.cpus)),
			interval: make([]int64, len(steps)),
			next:     make([]int64, len(steps)),
			failed:   make([]int, len(steps)),
			pass:     make([]passKind, len(steps)),
			amount:   make([]int, len(steps)),
			rng:      newRNG(seed, c),
		}
		for j := range steps {
			t.interval[j] = int64(steps[j].params.MinIntervalMs) * int64(cfg.IntervalUnit)
			a := cfg.StealLocal
			for k := 0; k < steps[j].hops && a < cfg.StealCap; k++ {
				a *= cfg.StealGrowth
			}
			t.amount[j] = max(1, min(a, cfg.StealCap))
		}
	}
	return b, nil
}

type hierBalancer struct {
	m       *machine
	cfg     HierarchicalConfig
	thieves []hierThief
}

func (b *hierBalancer) Thief(cpu int) Thief {
	if p := b.m.pos(cpu); p >= 0 {
		return &b.thieves[p]
	}
	return nil
}

func (b *hierBalancer) MaxVictims() int { return len(b.m.cpus) }

// hierThief is one CPU's state: Linux keeps the same per sched_domain
// (balance_interval, last_balance, nr_balance_failed) and per rq (cpu_load).
type hierThief struct {
	b     *hierBalancer
	cpu   int
	pos   int
	steps []step
	// smooth is this CPU's view of every CPU's load, (old + nr*128)/2 at
	// each look: Linux's cpu_load[] decay, kept by the observer so no
	// CPU writes another's state.
	smooth   []int64
	interval []int64    // balance_interval per step, ns
	next     []int64    // when each remote step may balance again
	failed   []int      // nr_balance_failed per step
	pass     []passKind // what the last Victims call of each step did, for Done
	amount   []int      // steal amount per step
	rng      rng
}

// passKind is what one Victims call did at a step: what Done may conclude
// from its outcome.
type passKind uint8

const (
	// passGated: no balancing happened (flags, interval or
	// should_we_balance); Done changes nothing.
	passGated passKind = iota
	// passBlind: victims listed without statistics (the innermost step
	// whose local group is this CPU alone); only a steal tells anything.
	passBlind
	// passBalanced: find_busiest_group found no imbalance (out_balanced).
	passBalanced
	// passImbalanced: an imbalance was found and victims listed.
	passImbalanced
)

func (t *hierThief) Steps() int { return len(t.steps) }

// look returns cpu's instantaneous load and updates the smoothed one.
func (t *hierThief) look(load Load, cpu int) (inst, smooth int64) {
	inst = cpuLoad(load, cpu)
	p := t.b.m.index[cpu]
	s := (t.smooth[p] + inst) / 2
	t.smooth[p] = s
	return inst, s
}

// groupStat is what update_sg_lb_stats gathers about one group.
type groupStat struct {
	avg     int64 // average load, read low (source) or high (target)
	idle    int   // CPUs running nothing with nothing queued
	running int   // CPUs running a task
	queued  bool  // some CPU has a queued task
}

// groupLoad gathers g's statistics, its load read low (source_load) or
// high (target_load).
func (t *hierThief) groupLoad(load Load, g []int, high bool) groupStat {
	var sum int64
	var gs groupStat
	for _, c := range g {
		inst, s := t.look(load, c)
		if high == (inst > s) {
			sum += inst
		} else {
			sum += s
		}
		q, r := load.Queued(c), load.Running(c)
		switch {
		case r:
			gs.running++
		case q == 0:
			gs.idle++
		}
		if q > 0 {
			gs.queued = true
		}
	}
	gs.avg = sum / int64(len(g))
	return gs
}

// spareBalanced is find_busiest_group's test for a busiest group that
// still has idle CPUs (group_has_spare, not overloaded): it is balanced
// unless the local group has at least two more idle CPUs, and across NUMA
// nodes a small imbalance (NUMA_IMBALANCE_MIN = 2 tasks) is allowed while
// the local group runs no more than imb_numa_nr tasks
// (adjust_numa_imbalance). This is what keeps work spawned on a node with
// idle CPUs on that node: its own idle CPUs take it.
func spareBalanced(st *step, local, busiest groupStat, busiestWeight int) bool {
	if busiest.idle == 0 {
		return false // overloaded: every CPU busy or queued
	}
	if busiestWeight > 1 && local.idle <= busiest.idle+1 {
		return true
	}
	if st.remote {
		imb := (local.idle - busiest.idle) / 2
		if local.running+1 <= max(st.params.ImbNUMANr, 1) && imb <= numaImbalanceMin {
			return true
		}
	}
	return false
}

// numaImbalanceMin is fair.c's NUMA_IMBALANCE_MIN.
const numaImbalanceMin = 2

// shouldBalance is should_we_balance: only the first idle CPU of the local
// group balances a remote level (this CPU counts as idle unless it
// balances in Busy mode); when none is idle, the group's first CPU.
func (t *hierThief) shouldBalance(st *step, load Load, s Search) bool {
	g := st.groups[0]
	for _, c := range g {
		if c == t.cpu && s.Mode != Busy || c != t.cpu && isIdle(load, c) {
			return c == t.cpu
		}
	}
	return g[0] == t.cpu
}

func (t *hierThief) Victims(buf []Victim, i int, load Load, s Search) []Victim {
	st := &t.steps[i]
	t.pass[i] = passGated
	if s.Mode == NewlyIdle && st.params.Flags&domains.FlagBalanceNewIdle == 0 && !s.Final {
		return buf
	}
	if st.remote && !s.Final {
		if s.Now < t.next[i] || !t.shouldBalance(st, load, s) {
			return buf
		}
	}
	t.pass[i] = passBalanced
	if len(st.groups[0]) == 1 && !st.remote && s.Mode != Busy {
		// The local group is this idle CPU alone (an SMT level, or cores
		// without SMT): find_busiest_group's test reduces to "the victim
		// has a queued task", which the steal itself checks. Skip the
		// statistics, so that the innermost steal, the hot one of a
		// fork-join program, reads no other CPU's counters: every CPU of
		// the step, from a random one on. Having read nothing, the pass
		// claims neither balance nor imbalance (passBlind).
		n := len(st.added)
		off := int(t.rng.next() % uint64(n))
		for k := range n {
			buf = append(buf, Victim{CPU: st.added[(off+k)%n], Level: st.depth, Max: t.amount[i]})
		}
		t.pass[i] = passBlind
		return buf
	}
	// find_busiest_group: the local group read high, the others low.
	local := t.groupLoad(load, st.groups[0], true)
	busiest, bs := -1, groupStat{avg: -1}
	for gi := 1; gi < len(st.groups); gi++ {
		gs := t.groupLoad(load, st.groups[gi], false)
		if gs.queued && gs.avg > bs.avg {
			busiest, bs = gi, gs
		}
	}
	if busiest >= 0 && spareBalanced(st, local, bs, len(st.groups[busiest])) {
		// Kept even on the Final pass: the busiest group's own idle CPUs
		// are the ones to run its work (the runtime wakes one of them).
		return buf
	}
	if s.Final {
		// Keep the reach, drop the gates: every CPU of the step with
		// work, busiest group first.
		start := len(buf)
		if busiest >= 0 {
			buf = t.appendQueued(buf, st.groups[busiest], load, st.depth, t.amount[i])
		}
		for _, c := range st.added {
			if load.Queued(c) > 0 && !inVictims(buf[start:], c) {
				buf = append(buf, Victim{CPU: c, Level: st.depth, Max: t.amount[i]})
			}
		}
		return buf
	}
	if busiest < 0 || 100*bs.avg <= int64(st.params.ImbalancePct)*local.avg {
		return buf // balanced
	}
	amount := t.amount[i]
	if s.Mode == Busy {
		// calculate_imbalance: move half the difference, in tasks, and
		// nothing when that is less than one task (a busy CPU pulling
		// the one queued task of a CPU as loaded as itself would only
		// start a ping-pong).
		imb := int((bs.avg - local.avg) * int64(len(st.groups[0])) / (2 * loadScale))
		if imb < 1 {
			return buf
		}
		amount = min(amount, imb)
	}
	t.pass[i] = passImbalanced
	return t.appendQueued(buf, st.groups[busiest], load, st.depth, amount)
}

// appendQueued appends the CPUs of g with queued work, most queued first
// (find_busiest_queue, then the rest of the group as load_balance's redo
// would try them).
func (t *hierThief) appendQueued(buf []Victim, g []int, load Load, depth, amount int) []Victim {
	start := len(buf)
	for _, c := range g {
		q := load.Queued(c)
		if q == 0 || c == t.cpu {
			continue
		}
		buf = append(buf, Victim{CPU: c, Level: depth, Max: amount})
		// Insertion by queue length, descending; Max holds the amount
		// until the end, so sort on a fresh look (lengths are hints).
		for j := len(buf) - 1; j > start && load.Queued(buf[j-1].CPU) < q; j-- {
			buf[j], buf[j-1] = buf[j-1], buf[j]
		}
	}
	return buf
}

func inVictims(vs []Victim, c int) bool {
	for _, v := range vs {
		if v.CPU == c {
			return true
		}
	}
	return false
}

func (t *hierThief) Done(i, taken int, s Search) {
	st := &t.steps[i]
	switch {
	case t.pass[i] == passGated:
		return // no balancing happened at this level
	case taken > 0:
		t.failed[i] = 0
		t.interval[i] = int64(st.params.MinIntervalMs) * int64(t.b.cfg.IntervalUnit)
	case t.pass[i] == passImbalanced:
		// Imbalanced, yet nothing moved. load_balance counts this in
		// nr_balance_failed only on periodic balancing: newly idle
		// passes are frequent, and counting them would wear down the
		// cache-hot hysteresis (in Linux also trigger active balancing)
		// within moments of a CPU going idle.
		if s.Mode != NewlyIdle {
			t.failed[i]++
		}
	case t.pass[i] == passBlind:
		// Nothing was read, so nothing is known: leave the count alone.
	case !s.Final:
		// Balanced: back off (load_balance's out_balanced, which also
		// clears nr_balance_failed).
		if mx := int64(st.params.MaxIntervalMs) * int64(t.b.cfg.IntervalUnit); t.interval[i] < mx {
			t.interval[i] = min(2*t.interval[i], mx)
		}
		t.failed[i] = 0
	}
	if st.remote {
		iv := t.interval[i]
		if s.Mode == Busy {
			iv *= int64(max(st.params.BusyFactor, 1))
		}
		t.next[i] = s.Now + iv
	}
}

// MayMigrate is can_migrate_task's cache-hot test: a task that ran within
// MigrationCost stays unless the step failed more than cache_nice_tries
// times.
func (t *hierThief) MayMigrate(i int, ranAgo int64) bool {
	if ranAgo < 0 || ranAgo >= int64(t.b.cfg.MigrationCost) {
		return true
	}
	return t.failed[i] > t.steps[i].params.CacheNiceTries
}
