package runtime

import (
	"time"

	"github.com/numasteal/numasteal/balance"
)

// Periodic balancing and the workers' coarse clock.
//
// Newly-idle stealing (worker.go's steal) moves work only when a worker
// has run out. Linux also balances periodically (rebalance_domains from
// the scheduler tick, CPU_NOT_IDLE): a busy CPU looks at its domains at
// each level's interval and pulls queued tasks from a busier group. In a
// run-to-completion runtime the pull has a different payoff than in a
// time-sliced kernel: the pulled tasks wait in the puller's deque while
// its current task runs, and are then where the puller's idle neighbours
// find them with a cheap local steal, instead of each of those neighbours
// crossing to the far node on its own (HotSLAW's point, made ahead of
// time). So a worker balances in balance.Busy mode when it starts a task
// with nothing else queued — the simulator's "a CPU running a task with an
// empty queue" (bench/sim_engine.go's tick) — at most once per
// Config.BalanceTick, and the policy's per-level intervals (stretched by
// busy_factor) and imbalance_pct decide whether anything moves. Flat and
// Local do no periodic balancing, as the Go runtime and Tokio do none.
//
// Cache-hot hysteresis. A task whose data its spawner touched within
// migration_cost is cache-hot where it was spawned: periodic balancing
// leaves it there until the level has failed cache_nice_tries times
// (can_migrate_task's task_hot test; balance.Thief.MayMigrate). Steals by
// idle workers ignore it, unlike Linux, whose can_migrate_task applies
// task_hot on every pass: here the idle steal is the main balancing path,
// an idle CPU is worth a cold cache, and in the simulator applying the
// test to idle steals made more of SDET's steals cross nodes
// (docs/BENCHMARKS.md, simulator section). The
// puller sees a task's age only once it owns it (reading a task still in
// another worker's deque would race with its owner recycling it), so a
// refused task goes back to its owner through the owner's inbox, the one
// queue anyone may add to: it keeps its CPU and cache, not its place in
// line.
//
// The clock. A task's age comes from Task.born, the pusher's coarse clock
// (worker.now) at the push: a plain store, because reading the real clock
// costs about 40 ns here (BenchmarkClockRead), more than a whole spawn and
// join (BenchmarkSpawnJoin, about 28 ns). worker.now
// advances at each steal attempt and every clockEvery tasks run through
// execute, where clockEvery adapts so that the clock is read about every
// clockPeriod whatever the tasks' length. It lags behind the real clock by
// up to about two clockPeriods, by up to maxClockEvery tasks' time when
// tasks suddenly get longer, and much longer inside a long inline Join
// recursion (inline calls do not pass through execute): stamps then make
// tasks look older than they are, so the hysteresis errs towards moving
// work, as if there were none. Counting a Join whose second half ran
// inline as a task (a tickClock there too) would avoid that, but costs
// about 10% of BenchmarkSpawnJoin, too much for the hot path.

// Coarse clock constants: guesses. At most maxClockEvery tasks pass
// between two reads, so a read costs a 10 ns task about 0.1 ns–1.4 ns, and
// when tasks suddenly get long the clock lags for at most that many of them
// before it is read at every task again.
const (
	clockPeriod   = 25 * time.Microsecond // target time between clock reads
	maxClockEvery = 64                    // most tasks between two reads
)

// defaultBalanceTick is Config.BalanceTick's default: the simulator's
// fork-join tick (bench/sim_workload.go), a few times the runtime's
// scaled balance intervals of a small domain.
const defaultBalanceTick = 200 * time.Microsecond

// clock returns the time since the runtime started, in nanoseconds (the
// policy's Search.Now), and refreshes w.now. Owner only.
func (w *worker) clock() int64 {
	w.now = int64(time.Since(w.rt.pol.start))
	return w.now
}

// tickClock is called by execute after each task: every clockEvery tasks
// it reads the clock, doubling or halving clockEvery to keep reads about
// clockPeriod apart. Owner only.
func (w *worker) tickClock() {
	if w.sinceClock++; w.sinceClock < w.clockEvery {
		return
	}
	last := w.now
	el := w.clock() - last
	switch {
	case el > 2*int64(clockPeriod):
		w.clockEvery = 1 // long tasks: read at every one
	case el > int64(clockPeriod) && w.clockEvery > 1:
		w.clockEvery /= 2
	case el < int64(clockPeriod/2) && w.clockEvery < maxClockEvery:
		w.clockEvery *= 2
	}
	w.sinceClock = 0
}

// ranAgo is how long ago t's data was last touched on its worker (its
// push), for balance.Thief.MayMigrate: -1 when unknown (an injected task,
// whose data is wherever its submitter ran).
func (t *Task) ranAgo(now int64) int64 {
	if t.born == 0 {
		return -1
	}
	return max(now-t.born, 0)
}

// maybeBalanceBusy runs periodic balancing if it is due: called by execute
// as w starts a task, when w has nothing else queued. Owner only.
func (w *worker) maybeBalanceBusy() {
	rt := w.rt
	if rt.busyTick <= 0 || w.now < w.nextBusy || w.hasLocalWork() {
		return
	}
	w.nextBusy = w.now + rt.busyTick
	w.balanceBusy()
}

// balanceBusy is one balance.Busy pass: the policy's steps innermost
// first; at the first victim that yields work (or refuses it as
// cache-hot) the pass ends. Owner only; allocates nothing unless w's deque
// grows.
func (w *worker) balanceBusy() {
	rt := w.rt
	pt := &rt.pol.thieves[w.id]
	th, load := pt.th, rt.load()
	s := balance.Search{Mode: balance.Busy, Now: w.now}
	for step := range th.Steps() {
		for _, v := range th.Victims(pt.buf[:0], step, load, s) {
			vw := rt.workerOn(v.CPU)
			if vw == nil || vw == w {
				continue
			}
			n, hot := w.pull(vw, step, v.Max, th)
			if n == 0 && !hot {
				continue // emptied meanwhile: try the next victim
			}
			th.Done(step, n, s) // n == 0: failed, counted towards cache_nice_tries
			if hot {
				w.cnt.hotRefusals++
			}
			if n > 0 {
				w.cnt.pulls[v.Level]++
				w.cnt.pulled += uint32(n)
				if vw.node != w.node {
					w.cnt.crossPulls++
					w.cnt.crossTasks += uint32(n)
				}
			}
			return
		}
		th.Done(step, 0, s)
	}
}

// pull moves up to maxN of v's oldest tasks (at most half of its deque,
// as StealHalf) onto w's deque, each only if the policy lets periodic
// balancing move it (MayMigrate); the first it refuses goes back to v
// through v's inbox and ends the pull. With nothing in v's deque it tries
// one task of v's inbox the same way (an injected task is never hot; one
// given back earlier may be). It returns the tasks moved and whether one
// was refused. Owner only.
func (w *worker) pull(v *worker, step, maxN int, th balance.Thief) (n int, hot bool) {
	want := max(1, min(maxN, (v.stealQ.Len()+1)/2))
	for n < want {
		t, retry := v.stealQ.Steal()
		if t == nil {
			if retry {
				continue
			}
			break
		}
		if !w.takePulled(v, t, step, th) {
			return n, true
		}
		n++
	}
	if n == 0 {
		if t := v.inbox.pop(); t != nil {
			t.returned = false
			if !w.takePulled(v, t, step, th) {
				return 0, true
			}
			n = 1
		}
	}
	if n > 0 {
		w.rt.notify() // idle neighbours may take them from here
	}
	return n, false
}

// takePulled puts t, just taken from v, on w's deque if the policy lets
// periodic balancing move it, and reports whether it did; a cache-hot t
// goes back to v's inbox instead (or, when v is exiting, stays with w: no
// task is lost). Owner only.
func (w *worker) takePulled(v *worker, t *Task, step int, th balance.Thief) bool {
	if !th.MayMigrate(step, t.ranAgo(w.now)) {
		t.returned = true // set before the push publishes t to v
		if v.inbox.push(t) {
			w.rt.notify() // park.go's rule 1: v may be parking
			return false
		}
		t.returned = false
	}
	w.dq.Push(t)
	return true
}
