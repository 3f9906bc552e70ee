package runtime

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/internal/corpus"
	"github.com/numasteal/numasteal/internal/testenv"
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// farNodeCPUs returns the first CPU of node 0 and the first CPU of the
// node farthest from it.
func farNodeCPUs(t *testing.T, topo *topology.Topology) (a, b int) {
	t.Helper()
	n0, ok := topo.Node(topo.NodeOf(topo.Usable.First()))
	if !ok {
		t.Fatal("no node for the first CPU")
	}
	a, b = n0.Usable.First(), -1
	far := 0
	for _, n := range topo.Nodes {
		if n.ID == n0.ID || n.Usable.IsEmpty() {
			continue
		}
		if d := topo.Distances.Between(n0.ID, n.ID); d > far {
			far, b = d, n.Usable.First()
		}
	}
	if b < 0 {
		t.Fatal("only one node with CPUs")
	}
	return a, b
}

// TestPeriodicPull: on two workers of a virtual 8-node machine, one on
// each of two far nodes, one worker runs a long chain of tasks (busy, with
// an empty queue at each task start) while the other runs a task that
// queues 64 tasks and then keeps its CPU. Periodic balancing must pull
// some of those tasks across the nodes while both are busy; with a
// migration cost of an hour every queued task is cache-hot, so the pulls
// come only after refusals (cache_nice_tries), and with 1ns none is
// refused. Every task runs exactly once either way.
func TestPeriodicPull(t *testing.T) {
	testenv.RequireShared(t)
	topo, err := topology.Discover(topology.WithRoot(corpus.Extract(t, "16amd64-8n2c")))
	if err != nil {
		t.Fatal(err)
	}
	a, b := farNodeCPUs(t, topo)
	for _, tc := range []struct {
		name string
		cost time.Duration
		hot  bool
	}{
		{"hot", time.Hour, true},
		{"cold", time.Nanosecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var target atomic.Int32
			rt := newTestRuntime(t, Config{
				Topology:    topo,
				CPUs:        cpuset.Of(a, b),
				Policy:      balance.NewHierarchical(balance.HierarchicalConfig{MigrationCost: tc.cost}),
				BalanceTick: time.Nanosecond,
				foldEvery:   1,
			})
			placeOn(rt, func(uint64) int { return int(target.Load()) })
			const queued, maxLinks = 64, 200000
			var (
				ran     [queued]atomic.Int32
				links   atomic.Int32
				stop    atomic.Bool
				xOn     atomic.Int32
				chainOn atomic.Int32
			)
			xOn.Store(-1)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			g := rt.Group(ctx)
			// X first: while it runs, its worker cannot take the chain,
			// so the chain stays on the other worker, which is then never
			// idle (each link queues the next before it returns) and can
			// take X's tasks only by periodic balancing.
			target.Store(0)
			g.Go(func(c *Ctx) error {
				xOn.Store(int32(c.Worker()))
				for links.Load() < 10 && ctx.Err() == nil {
					burn(100)
				}
				// Age the stamp the queued tasks get (this worker's clock
				// stands still while this task runs), so that with a 1ns
				// migration cost none looks hot.
				for start := time.Now(); time.Since(start) < time.Millisecond; {
					burn(100)
				}
				for i := range queued {
					c.Go(g, func(*Ctx) error { ran[i].Add(1); return nil })
				}
				// Keep the CPU until the other worker has pulled.
				for rt.Stats().Total.PulledTasks == 0 && ctx.Err() == nil {
					burn(100)
				}
				stop.Store(true)
				return nil
			})
			for xOn.Load() < 0 {
				time.Sleep(100 * time.Microsecond)
			}
			var chain Func
			chain = func(c *Ctx) error {
				chainOn.Store(int32(c.Worker()))
				burn(500)
				if links.Add(1) < maxLinks && !stop.Load() {
					c.Go(g, chain)
				}
				return nil
			}
			target.Store(1)
			g.Go(chain)
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			requireRanOnce(t, ran[:])
			rt.Close()
			s := rt.Stats()
			t.Logf("chain on worker %d, queuing task on worker %d; %d links; pulls per level %v %v, %d tasks (%d cross-node), %d hot refusals; steals %v",
				chainOn.Load(), xOn.Load(), links.Load(), s.Levels, s.Total.Pulls,
				s.Total.PulledTasks, s.Total.CrossNodePulls, s.Total.HotRefusals, s.Total.Steals)
			if s.Total.PulledTasks == 0 || s.Total.CrossNodePulls == 0 {
				t.Fatalf("no cross-node pull: %d tasks pulled, %d cross-node pulls", s.Total.PulledTasks, s.Total.CrossNodePulls)
			}
			var pulls uint64
			for _, n := range s.Total.Pulls {
				pulls += n
			}
			if pulls < s.Total.CrossNodePulls || s.Total.PulledTasks < pulls {
				t.Errorf("pulls %d, cross-node %d, tasks %d: inconsistent", pulls, s.Total.CrossNodePulls, s.Total.PulledTasks)
			}
			switch {
			case tc.hot && s.Total.HotRefusals == 0:
				t.Errorf("every queued task was cache-hot, yet no pull was refused")
			case !tc.hot && s.Total.HotRefusals != 0:
				t.Errorf("no queued task was cache-hot, yet %d pulls were refused", s.Total.HotRefusals)
			}
		})
	}
}

// TestNoPeriodicBalancing: a negative BalanceTick turns periodic
// balancing off, and Flat, which has none, never pulls.
func TestNoPeriodicBalancing(t *testing.T) {
	for _, cfg := range []Config{{BalanceTick: -1}, {Policy: balance.Flat{}, BalanceTick: time.Nanosecond}} {
		rt := newTestRuntime(t, cfg)
		err := parallelFor(rt, context.Background(), 0, 1<<12, 1, func(c *Ctx, lo, hi int) error {
			burn(200)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		rt.Close()
		if s := rt.Stats(); s.Total.PulledTasks != 0 || s.Total.HotRefusals != 0 {
			t.Errorf("policy %s, tick %v: %d tasks pulled, %d refusals", rt.pol.policy.Name(), cfg.BalanceTick,
				s.Total.PulledTasks, s.Total.HotRefusals)
		}
	}
}

// TestCoarseClockAdapts: the worker's clock is read less often while tasks
// are short (clockEvery grows) and at every task once they are long
// (clockEvery falls to 1), and it never runs backwards.
func TestCoarseClockAdapts(t *testing.T) {
	rt := &Runtime{}
	rt.pol.start = time.Now()
	w := &worker{rt: rt, clockEvery: 1}
	w.clock()
	last := w.now
	for range 100000 {
		w.tickClock()
		if w.now < last {
			t.Fatalf("clock went back from %d to %d", last, w.now)
		}
		last = w.now
	}
	if w.clockEvery <= 1 {
		t.Errorf("after 100000 instant tasks clockEvery = %d, want > 1", w.clockEvery)
	}
	// At most maxClockEvery tasks pass before the clock is read again and
	// sees how long they took.
	for range maxClockEvery + 1 {
		time.Sleep(3 * clockPeriod)
		w.tickClock()
	}
	if w.clockEvery != 1 {
		t.Errorf("after tasks of 3×clockPeriod clockEvery = %d, want 1", w.clockEvery)
	}
	if got, want := w.now, int64(time.Since(rt.pol.start)); got > want || want-got > int64(time.Second) {
		t.Errorf("coarse clock %d ns, real %d ns", got, want)
	}
}
