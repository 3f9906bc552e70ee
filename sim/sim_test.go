package sim

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/internal/corpus"
	"github.com/numasteal/numasteal/topology"
)

func simTopology(t *testing.T, name string) *topology.Topology {
	t.Helper()
	topo, err := topology.Discover(topology.WithRoot(corpus.Extract(t, name)))
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// TestEveryTaskRunsOnce runs every workload under every policy on machines
// of several shapes: each task must run exactly once (the engine counts
// starts per task and fails on a second start or a task never run).
func TestEveryTaskRunsOnce(t *testing.T) {
	for _, m := range []string{"16amd64-8n2c", "8em64t-2s2ca2c", "48amd64-4pa2n6c-sparse", "2arm-2c"} {
		topo := simTopology(t, m)
		for _, w := range Workloads() {
			t.Run(m+"/"+w, func(t *testing.T) {
				r, err := Run(context.Background(), Options{Topology: topo, Workload: w, Seed: 7})
				if err != nil {
					t.Fatal(err)
				}
				if len(r.Policies) != 3 {
					t.Fatalf("%d policies, want 3", len(r.Policies))
				}
				for _, p := range r.Policies {
					if p.TasksRun != r.Tasks {
						t.Errorf("%s: %d of %d tasks ran", p.Name, p.TasksRun, r.Tasks)
					}
					if p.MakespanS <= 0 || p.Utilization <= 0 || p.Utilization > 1 || p.WorkInflation < 1 {
						t.Errorf("%s: implausible %+v", p.Name, p)
					}
					if p.RemoteSteals > p.Steals || p.RemoteStealFraction < 0 || p.RemoteStealFraction > 1 {
						t.Errorf("%s: remote steals %d of %d (%v)", p.Name, p.RemoteSteals, p.Steals, p.RemoteStealFraction)
					}
				}
			})
		}
	}
}

// TestSameSeedSameResult: the same seed gives the same result, another seed
// another workload.
func TestSameSeedSameResult(t *testing.T) {
	topo := simTopology(t, "16amd64-8n2c")
	run := func(seed uint64) Result {
		r, err := Run(context.Background(), Options{Topology: topo, Workload: "sdet", Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b, c := run(3), run(3), run(4)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("seed 3 twice:\n%+v\n%+v", a, b)
	}
	if reflect.DeepEqual(a.Policies, c.Policies) {
		t.Errorf("seeds 3 and 4 gave the same result")
	}
}

// simRun names one simulated run of the target: machine, workload, seed.
type simRun struct {
	machine, workload string
	seed              uint64
}

func (r simRun) String() string { return fmt.Sprintf("%s %s seed %d", r.machine, r.workload, r.seed) }

// TestHierarchicalTarget checks the target Hierarchical is held to on
// 16amd64-8n2c and 128ia64-17n4s2c, for seeds 1-5 and every workload: its
// remote-steal fraction is at most half Flat's, and its makespan is within
// 5% of the best policy's. It holds in 25 of the 30 runs; misses lists
// the other five with the reason docs/BENCHMARKS.md gives ("The target
// across seeds 1–5"), and the test fails if one of them starts to meet the
// target, so that the document and this list are updated together. Every run, the
// misses included, must keep what the document claims for all of them:
// a makespan within 6% of the best, at most half Flat's cross-node
// migrations, Local at least twice as slow, and, pooled over the five
// seeds, at most half Flat's remote-steal fraction.
//
// Under the race detector only seed 1 runs: the simulator is
// single-threaded and deterministic, so the other seeds would only recheck
// numbers at ten times the cost (two minutes or more).
func TestHierarchicalTarget(t *testing.T) {
	misses := map[simRun]string{
		// Two CPUs a node: every steal comes in the tail, where a CPU's
		// one neighbour has often run dry too, and a run has so few
		// steals that one or two decide its fraction.
		{"16amd64-8n2c", "kernbench", 2}: "fraction: 2 of 3 steals remote",
		{"16amd64-8n2c", "kernbench", 4}: "fraction: 3 of 6 steals remote",
		{"16amd64-8n2c", "kernbench", 5}: "fraction: 5 of 10 steals remote",
		{"16amd64-8n2c", "sdet", 1}:      "fraction: 5 of 10 steals remote",
		// The makespan is the 8s compile's wait plus its chain: it is
		// third on its CPU, behind 0.73s of compiles, and under Flat it
		// happened to land behind one of 0.17s.
		{"128ia64-17n4s2c", "kernbench", 1}: "makespan 1.051 × Flat's",
	}
	seeds := uint64(5)
	if raceDetector {
		seeds = 1
	}
	for _, m := range []string{"16amd64-8n2c", "128ia64-17n4s2c"} {
		topo := simTopology(t, m)
		for _, w := range Workloads() {
			var hRemote, hSteals, fRemote, fSteals int
			for seed := uint64(1); seed <= seeds; seed++ {
				run := simRun{m, w, seed}
				r, err := Run(context.Background(), Options{Topology: topo, Workload: w, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				by := map[string]PolicyStats{}
				best := r.Policies[0].MakespanS
				for _, p := range r.Policies {
					by[p.Name] = p
					best = min(best, p.MakespanS)
				}
				h, f, l := by["hierarchical"], by["flat"], by["local"]
				hRemote, hSteals = hRemote+h.RemoteSteals, hSteals+h.Steals
				fRemote, fSteals = fRemote+f.RemoteSteals, fSteals+f.Steals
				fraction := h.RemoteStealFraction <= 0.5*f.RemoteStealFraction
				span := h.MakespanS <= 1.05*best
				t.Logf("%v: remote-steal fraction %.3f (%d/%d), Flat %.3f; makespan %.4gs, %.3f × best",
					run, h.RemoteStealFraction, h.RemoteSteals, h.Steals, f.RemoteStealFraction, h.MakespanS, h.MakespanS/best)
				why, known := misses[run]
				switch {
				case known && fraction && span:
					t.Errorf("%v meets the target now (listed as a miss: %s): update docs/BENCHMARKS.md and this test", run, why)
				case !known && !fraction:
					t.Errorf("%v: remote-steal fraction %.3f > half of Flat's %.3f", run, h.RemoteStealFraction, f.RemoteStealFraction)
				case !known && !span:
					t.Errorf("%v: makespan %.4gs > 1.05 × best %.4gs", run, h.MakespanS, best)
				}
				if h.MakespanS > 1.06*best {
					t.Errorf("%v: makespan %.4gs > 1.06 × best %.4gs", run, h.MakespanS, best)
				}
				if 2*h.CrossNodeMigrations > f.CrossNodeMigrations {
					t.Errorf("%v: %d cross-node migrations, more than half of Flat's %d", run, h.CrossNodeMigrations, f.CrossNodeMigrations)
				}
				if l.MakespanS < 2*h.MakespanS {
					t.Errorf("%v: Local %.4gs, not clearly slower than Hierarchical %.4gs", run, l.MakespanS, h.MakespanS)
				}
			}
			if seeds < 5 {
				continue
			}
			if hf, ff := float64(hRemote)/float64(hSteals), float64(fRemote)/float64(fSteals); hf > 0.5*ff {
				t.Errorf("%s %s, seeds 1-5 pooled: remote-steal fraction %.3f (%d/%d) > half of Flat's %.3f (%d/%d)",
					m, w, hf, hRemote, hSteals, ff, fRemote, fSteals)
			}
		}
	}
}

func TestRunErrors(t *testing.T) {
	topo := simTopology(t, "2arm-2c")
	if _, err := Run(context.Background(), Options{Topology: topo, Workload: "nope"}); err == nil {
		t.Error("unknown workload: no error")
	}
	if _, err := Run(context.Background(), Options{Workload: "sdet"}); err == nil {
		t.Error("no topology: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, Options{Topology: topo, Workload: "sdet", Policies: []balance.Policy{balance.Flat{}}}); err == nil {
		t.Error("canceled context: no error")
	}
}
