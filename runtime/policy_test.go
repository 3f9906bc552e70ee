package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/internal/corpus"
	"github.com/numasteal/numasteal/internal/testenv"
	"github.com/numasteal/numasteal/topology"
)

// policyMachines are the topologies the policy tests run on: the live
// machine, and (with the shared corpus) two dumps run unpinned.
func policyMachines(t *testing.T) map[string]*topology.Topology {
	m := map[string]*topology.Topology{"live": nil}
	if _, err := testenv.SharedDir(); err != nil {
		t.Logf("no virtual machine: %v", err)
		return m
	}
	for _, name := range []string{"16amd64-8n2c", "48amd64-4pa2n6c-sparse"} {
		topo, err := topology.Discover(topology.WithRoot(corpus.Extract(t, name)))
		if err != nil {
			t.Fatal(err)
		}
		m[name] = topo
	}
	return m
}

// placeOn replaces the placement of rt's policy: the n-th task placed (n
// from 1) lands on the worker with id place(n). Stealing stays the
// policy's. Tests use it to put injected tasks where they need them; call
// it before anything is submitted (only placeFrom reads the balancer).
func placeOn(rt *Runtime, place func(n uint64) int) {
	rt.pol.bal = &placedBalancer{Balancer: rt.pol.bal, rt: rt, place: place}
}

// placedBalancer is a bound policy whose Place answers place's worker.
type placedBalancer struct {
	balance.Balancer
	rt    *Runtime
	n     atomic.Uint64
	place func(n uint64) int
}

func (b *placedBalancer) Place(int, balance.PlaceKind, balance.Load) int {
	return b.rt.workers[b.place(b.n.Add(1))%len(b.rt.workers)].cpu
}

// TestPoliciesRunEveryTaskOnce runs a fork-join tree, plain spawns and
// injected tasks under each policy and checks that every task ran exactly
// once, and that the statistics agree.
func TestPoliciesRunEveryTaskOnce(t *testing.T) {
	for name, topo := range policyMachines(t) {
		for _, pn := range balance.Names() {
			t.Run(name+"/"+pn, func(t *testing.T) {
				p, err := balance.ByName(pn)
				if err != nil {
					t.Fatal(err)
				}
				rt := newTestRuntime(t, Config{Topology: topo, Policy: p})
				if rt.pol.policy.Name() != pn {
					t.Fatalf("policy %s, want %s", rt.pol.policy.Name(), pn)
				}
				const leaves, injected = 1 << 11, 200
				runs := make([]atomic.Int32, leaves+injected)
				var tree func(c *Ctx, lo, hi int) error
				tree = func(c *Ctx, lo, hi int) error {
					if hi-lo == 1 {
						runs[lo].Add(1)
						burn(200)
						return nil
					}
					mid := (lo + hi) / 2
					return c.Join(func(c *Ctx) error { return tree(c, lo, mid) },
						func(c *Ctx) error { return tree(c, mid, hi) })
				}
				g := rt.Group(context.Background())
				g.Go(func(c *Ctx) error { return tree(c, 0, leaves) })
				for i := range injected {
					g.Go(func(c *Ctx) error {
						runs[leaves+i].Add(1)
						return nil
					})
				}
				if err := g.Wait(); err != nil {
					t.Fatal(err)
				}
				requireRanOnce(t, runs)
				rt.Close()
				s := rt.Stats()
				var steals uint64
				for _, n := range s.Total.Steals {
					steals += n
				}
				if s.Total.CrossNodeSteals > steals || s.Total.CrossNodeMigrations < s.Total.CrossNodeSteals {
					t.Errorf("cross-node steals %d, migrations %d, steals %d", s.Total.CrossNodeSteals, s.Total.CrossNodeMigrations, steals)
				}
				if pn == "local" && s.Total.CrossNodeMigrations > 0 {
					// Only the rescue of stranded injected tasks may cross.
					t.Logf("local: %d cross-node migrations (rescues of injected tasks)", s.Total.CrossNodeMigrations)
				}
				t.Logf("steals per level %v %v, cross-node steals %d moving %d tasks",
					s.Levels, s.Total.Steals, s.Total.CrossNodeSteals, s.Total.CrossNodeMigrations)
			})
		}
	}
}

// TestCrossNodeStealsCounted: on a virtual 8-node machine, Flat steals
// across nodes, and the counters say so. The work is 64 children pushed
// by a task that then blocks (not helping) until they all ran: other
// workers must steal every one, and with Flat's random victims the 15
// thieves are on other nodes but one. (A ParallelFor would not do: its
// lazy splitting may leave nothing to steal, one CPU running all the
// virtual workers.)
func TestCrossNodeStealsCounted(t *testing.T) {
	testenv.RequireShared(t)
	topo, err := topology.Discover(topology.WithRoot(corpus.Extract(t, "16amd64-8n2c")))
	if err != nil {
		t.Fatal(err)
	}
	rt := newTestRuntime(t, Config{Topology: topo, Policy: balance.Flat{}})
	for round := range 20 {
		g := rt.Group(context.Background())
		g.Go(func(c *Ctx) error {
			const n = 64
			var ran sync.WaitGroup
			ran.Add(n)
			all := make(chan struct{})
			go func() { ran.Wait(); close(all) }()
			for range n {
				c.Go(g, func(*Ctx) error { burn(2000); ran.Done(); return nil })
			}
			return awaitRan(rt, all, fmt.Sprintf("round %d: the children of a blocked task", round))
		})
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		if s := rt.Stats(); s.Total.CrossNodeSteals > 0 {
			break
		}
	}
	rt.Close()
	s := rt.Stats()
	if s.Total.CrossNodeSteals == 0 || s.Total.CrossNodeMigrations < s.Total.CrossNodeSteals {
		t.Errorf("flat on 8 nodes: %d cross-node steals, %d migrations", s.Total.CrossNodeSteals, s.Total.CrossNodeMigrations)
	}
	var perWorker uint64
	for _, w := range s.Workers {
		perWorker += w.CrossNodeSteals
	}
	if perWorker != s.Total.CrossNodeSteals {
		t.Errorf("workers sum to %d cross-node steals, total %d", perWorker, s.Total.CrossNodeSteals)
	}
}

// TestPlace: the policy's placement answers a worker's CPU, from a
// worker's CPU or from nowhere, and on an idle virtual machine the default
// policy keeps a placement from a CPU on that CPU while it is idle.
func TestPlace(t *testing.T) {
	for name, topo := range policyMachines(t) {
		rt := newTestRuntime(t, Config{Topology: topo})
		for _, kind := range []balance.PlaceKind{balance.PlaceFork, balance.PlaceExec} {
			if cpu := rt.Place(-1, kind, nil); rt.workerOn(cpu) == nil {
				t.Errorf("%s: Place(-1, %v) = %d, not a worker's CPU", name, kind, cpu)
			}
		}
		from := rt.workers[0].cpu
		if got := rt.Place(from, balance.PlaceFork, rt.Load()); got != from {
			t.Errorf("%s: idle machine: placed from CPU %d on %d", name, from, got)
		}
	}
}

// TestVirtual256 starts and stops a runtime of 256 unpinned workers
// standing for 256ia64-64n2s2c's CPUs, runs a fork-join tree on it and
// logs how long each step took.
func TestVirtual256(t *testing.T) {
	testenv.RequireShared(t)
	topo, err := topology.Discover(topology.WithRoot(corpus.Extract(t, "256ia64-64n2s2c")))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rt, err := New(Config{Topology: topo})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Since(start)
	if rt.Workers() != 256 {
		t.Errorf("%d workers, want 256", rt.Workers())
	}
	start = time.Now()
	var sum atomic.Int64
	err = parallelFor(rt, context.Background(), 0, 1<<14, 4, func(c *Ctx, lo, hi int) error {
		sum.Add(int64(hi - lo))
		return nil
	})
	ran := time.Since(start)
	if err != nil || sum.Load() != 1<<14 {
		t.Errorf("ParallelFor: %v, sum %d", err, sum.Load())
	}
	start = time.Now()
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	s := rt.Stats()
	t.Logf("256 workers: New %v, 16384 iterations %v, Close %v; levels %v steals %v; cross-node steals %d",
		started, ran, time.Since(start), s.Levels, s.Total.Steals, s.Total.CrossNodeSteals)
}
