package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/sim"
	"github.com/numasteal/numasteal/topology"
)

func runBenchSim(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal bench sim", stderr)
	root := fs.String("root", "", "simulate the machine of the sysfs dump under `DIR` (required)")
	workload := fs.String("workload", "kernbench", "workload: kernbench, forkjoin or sdet")
	policy := fs.String("policy", "", "simulate only this policy (hierarchical, flat, local); default all three")
	seed := fs.Uint64("seed", 1, "random seed; the same seed gives the same result")
	asJSON := fs.Bool("json", false, "print one JSON object")
	stealGrowth := fs.Int("steal-growth", 0, "hierarchical: steal amount factor per level beyond the LLC (0 = default)")
	stealLocal := fs.Int("steal-local", 0, "hierarchical: tasks per steal inside the LLC (0 = default)")
	intervalUnit := fs.Duration("interval-unit", 0, "hierarchical: what one Linux balance-interval millisecond becomes (0 = default)")
	farmHosts := fs.String("farm-hosts", "", "simulate the compile-farm level instead: kernbench on farms of these many 16-CPU `hosts` (e.g. 1,2,4,8,16,64); no --root needed")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if *farmHosts != "" && fs.NArg() == 0 {
		return runBenchSimFarm(ctx, *farmHosts, *seed, *asJSON, stdout, stderr) // bench_sim_farm.go
	}
	if *root == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: numasteal bench sim --root DIR [--workload kernbench|forkjoin|sdet] [--policy P] [--seed N] [--json]")
		return exitUsage
	}
	if !slices.Contains(sim.Workloads(), *workload) {
		fmt.Fprintf(stderr, "numasteal bench sim: unknown --workload %q (want %s)\n", *workload, strings.Join(sim.Workloads(), ", "))
		return exitUsage
	}
	topo, err := topology.Discover(topology.WithRoot(*root))
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench sim: --root %s: %v\n", *root, err)
		return exitUsage // a dump that cannot be read is bad input
	}
	names := balance.Names()
	if *policy != "" {
		names = []string{*policy}
	}
	var pols []balance.Policy
	for _, n := range names {
		p, err := balance.ByName(n)
		if err != nil {
			fmt.Fprintf(stderr, "numasteal bench sim: %v\n", err)
			return exitUsage
		}
		if _, ok := p.(*balance.Hierarchical); ok && (*stealGrowth > 0 || *stealLocal > 0 || *intervalUnit > 0) {
			p = balance.NewHierarchical(balance.HierarchicalConfig{StealGrowth: *stealGrowth, StealLocal: *stealLocal, IntervalUnit: *intervalUnit})
		}
		pols = append(pols, p)
	}
	res, err := sim.Run(ctx, sim.Options{Topology: topo, Workload: *workload, Policies: pols, Seed: *seed})
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench sim: %v\n", err)
		return exitFail
	}
	if *asJSON {
		return writeJSON(stdout, res)
	}
	fmt.Fprintf(stdout, "SIMULATION: %s on %d CPUs, %d nodes, %d tasks, seed %d\n\n", res.Workload, res.CPUs, res.Nodes, res.Tasks, res.Seed)
	fmt.Fprintf(stdout, "%-13s %11s %8s %8s %10s %9s %8s\n", "policy", "makespan", "util", "remote", "x-node mig", "inflation", "steals")
	for _, p := range res.Policies {
		fmt.Fprintf(stdout, "%-13s %10.4fs %7.1f%% %7.1f%% %10d %9.3f %8d\n", p.Name, p.MakespanS, 100*p.Utilization,
			100*p.RemoteStealFraction, p.CrossNodeMigrations, p.WorkInflation, p.Steals)
	}
	return exitOK
}
