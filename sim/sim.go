package sim

import (
	"context"
	"fmt"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/domains"
)

// Options configure Run. Zero fields mean defaults.
type Options struct {
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
	Cost Cost
}

// Cost is the simulator's cost model. Distances are SLIT values (10 =
// local); "per distance" means scaled by distance/10. Zero fields take the
// defaults in brackets.
type Cost struct {
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

func (c *Cost) defaults(w simWorkload) {
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

// Result is the outcome of Run: one entry per policy.
type Result struct {
	// Workload is the workload simulated (Options.Workload).
	Workload string `json:"workload"`
	// CPUs is the number of simulated CPUs: the topology's usable ones.
	CPUs int `json:"cpus"`
	// Nodes is the number of NUMA nodes those CPUs are on.
	Nodes int `json:"nodes"`
	// Seed is Options.Seed.
	Seed uint64 `json:"seed"`
	// Tasks is the number of tasks the workload creates, the same under
	// every policy.
	Tasks int `json:"tasks"`
	// Policies are the policies' figures, in the order they were run.
	Policies []PolicyStats `json:"policies"`
}

// PolicyStats are one policy's figures. MakespanS, RemoteStealFraction,
// CrossNodeMigrations and Utilization are the headline figures; the rest
// explain them.
type PolicyStats struct {
	// Name is the policy's name (balance.Policy.Name).
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
	// Steals counts the successful steals of idle CPUs, RemoteSteals
	// those from another node, StolenTasks the tasks they took (a batch
	// steal takes several).
	Steals       int `json:"steals"`
	RemoteSteals int `json:"remote_steals"`
	StolenTasks  int `json:"stolen_tasks"`
	// Pulls are periodic balancing's moves (a busy CPU pulling queued
	// tasks), RemotePulls those across nodes.
	Pulls       int `json:"pulls"`
	RemotePulls int `json:"remote_pulls"`
	// TasksRun counts the tasks that ran: always Result.Tasks, since Run
	// fails when a task is stranded or runs twice.
	TasksRun int `json:"tasks_run"`
}

// Workloads lists the workload names Run accepts.
func Workloads() []string { return []string{"kernbench", "forkjoin", "sdet"} }

// Run simulates the workload on the topology under each policy.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Topology == nil {
		return Result{}, fmt.Errorf("sim: no topology")
	}
	if _, err := newSimWorkload(o.Workload, 1, 0); err != nil {
		return Result{}, err
	}
	doms, err := domains.Build(o.Topology)
	if err != nil {
		return Result{}, fmt.Errorf("sim: %w", err)
	}
	pols := o.Policies
	if len(pols) == 0 {
		for _, n := range balance.Names() {
			p, err := balance.ByName(n)
			if err != nil {
				return Result{}, err
			}
			pols = append(pols, p)
		}
	}
	res := Result{Workload: o.Workload, CPUs: o.Topology.Usable.Len(), Seed: o.Seed}
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
