package bench

import (
	"context"
	"fmt"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/domains"
)

// SimOptions configure RunSim. Zero fields mean defaults.
type SimOptions struct {
	// Topology is the machine to simulate (usually a dump read with
	// topology.WithRoot); its usable CPUs are the simulated CPUs.
	Topology *topology.Topology
	// Workload is "kernbench", "forkjoin" or "sdet".
	Workload string
	// Policies are compared one after the other on the same workload;
	// nil means Hierarchical, Flat and Local with default settings.
	Policies []balance.Policy
	// Seed makes the workload and the policies' random choices
	// reproducible; the same seed gives the same result.
	Seed uint64
	// Cost is the cost model; zero fields take the defaults.
	Cost SimCost
}

// SimCost is the simulator's cost model. Distances are SLIT values (10 =
// local); "per distance" means scaled by distance/10. Zero fields take the
// defaults in brackets.
type SimCost struct {
	// ProbeNs is the time to look at another CPU's queue, per distance
	// [100].
	ProbeNs float64
	// StealNs is the latency of a successful steal, per distance [1000].
	StealNs float64
	// StealPerTaskNs is added for each further task of a batch steal, per
	// distance [200].
	StealPerTaskNs float64
	// RemoteSlowdown is how much slower a task runs per 10 units of
	// distance between the CPU and the node its data lives on [0.3]:
	// distance 20 runs at 1.3x, 40 at 1.9x.
	RemoteSlowdown float64
	// RefillNs is the cache-refill penalty of a task that runs away from
	// the CPU whose cache holds its data (its creator's or its last CPU),
	// scaled ×0.25 inside the LLC and by distance/10 across nodes. Zero
	// takes the workload's default (forkjoin 5µs, sdet 200µs, kernbench
	// 0: a freshly exec'd compiler has no warm cache to lose).
	RefillNs float64
}

func (c *SimCost) defaults(w simWorkload) {
	if c.ProbeNs <= 0 {
		c.ProbeNs = 100
	}
	if c.StealNs <= 0 {
		c.StealNs = 1000
	}
	if c.StealPerTaskNs <= 0 {
		c.StealPerTaskNs = 200
	}
	if c.RemoteSlowdown <= 0 {
		c.RemoteSlowdown = 0.3
	}
	if c.RefillNs <= 0 {
		c.RefillNs = w.params().refillNs
	}
}

// SimResult is the outcome of RunSim: one entry per policy.
type SimResult struct {
	Workload string           `json:"workload"`
	CPUs     int              `json:"cpus"`
	Nodes    int              `json:"nodes"`
	Seed     uint64           `json:"seed"`
	Tasks    int              `json:"tasks"`
	Policies []SimPolicyStats `json:"policies"`
}

// SimPolicyStats are one policy's figures. The first four are the ones
// the issue asks for; the rest explain them.
type SimPolicyStats struct {
	Name string `json:"name"`
	// MakespanS is the virtual time from the first task to the last, in
	// seconds.
	MakespanS float64 `json:"makespan_s"`
	// RemoteStealFraction is the share of steals (by idle CPUs) whose
	// victim was on another NUMA node (0 when nothing was stolen).
	// Periodic balancing's moves are counted apart, in Pulls.
	RemoteStealFraction float64 `json:"remote_steal_fraction"`
	// CrossNodeMigrations counts tasks moved to another node by steals
	// and by periodic balancing (a batch steal moves several).
	CrossNodeMigrations int `json:"cross_node_migrations"`
	// Utilization is busy CPU time over makespan × CPUs.
	Utilization float64 `json:"utilization"`
	// WorkInflation is the CPU time spent over the tasks' base work
	// (remote slow-down and cache refills).
	WorkInflation float64 `json:"work_inflation"`
	Steals        int     `json:"steals"`
	RemoteSteals  int     `json:"remote_steals"`
	StolenTasks   int     `json:"stolen_tasks"`
	// Pulls are periodic balancing's moves (a busy CPU pulling queued
	// tasks), RemotePulls those across nodes.
	Pulls       int `json:"pulls"`
	RemotePulls int `json:"remote_pulls"`
	TasksRun    int `json:"tasks_run"`
}

// SimWorkloads lists the workload names RunSim accepts.
func SimWorkloads() []string { return []string{"kernbench", "forkjoin", "sdet"} }

// RunSim simulates the workload on the topology under each policy.
func RunSim(ctx context.Context, o SimOptions) (SimResult, error) {
	if o.Topology == nil {
		return SimResult{}, fmt.Errorf("bench: sim: no topology")
	}
	if _, err := newSimWorkload(o.Workload, 1, 0); err != nil {
		return SimResult{}, err
	}
	doms, err := domains.Build(o.Topology)
	if err != nil {
		return SimResult{}, fmt.Errorf("bench: sim: %w", err)
	}
	pols := o.Policies
	if len(pols) == 0 {
		for _, n := range balance.Names() {
			p, err := balance.ByName(n)
			if err != nil {
				return SimResult{}, err
			}
			pols = append(pols, p)
		}
	}
	res := SimResult{Workload: o.Workload, CPUs: o.Topology.Usable.Len(), Seed: o.Seed}
	nodes := map[int]bool{}
	for c := range o.Topology.Usable.All() {
		nodes[o.Topology.NodeOf(c)] = true
	}
	res.Nodes = len(nodes)
	for _, p := range pols {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		e, err := newSimEngine(o, doms, p)
		if err != nil {
			return res, err
		}
		st, err := e.run(ctx)
		if err != nil {
			return res, err
		}
		res.Tasks = e.total
		res.Policies = append(res.Policies, st)
	}
	return res, nil
}
