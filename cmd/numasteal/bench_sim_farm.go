package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/numasteal/numasteal/sim"
)

// parseHostCounts parses --farm-hosts: a comma-separated list of farm
// sizes, each at least 1.
func parseHostCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--farm-hosts %q: %q is not a host count (want 1 or more)", s, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// runBenchSimFarm is "numasteal bench sim --farm-hosts N,N,...": the farm
// level of the simulator (sim.RunFarm), kernbench on farms of that
// many 16-CPU hosts under each farm placement strategy.
func runBenchSimFarm(ctx context.Context, hosts string, seed uint64, asJSON bool, stdout, stderr io.Writer) int {
	counts, err := parseHostCounts(hosts)
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench sim: %v\n", err)
		return exitUsage
	}
	res, err := sim.RunFarm(ctx, sim.FarmOptions{Hosts: counts, Seed: seed})
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench sim: %v\n", err)
		return exitFail
	}
	if asJSON {
		return writeJSON(stdout, res)
	}
	c := res.Cost
	fmt.Fprintf(stdout, "SIMULATION: %s (%d tasks) on farms of %d-CPU hosts, means of %d runs (seeds %d-%d)\n", res.Workload, res.Tasks, res.CPUsPerHost, res.Runs, res.Seed, res.Seed+uint64(res.Runs)-1)
	fmt.Fprintf(stdout, "network %.0fµs one way, %.0f MB/s each way; preprocessed source %.1f MB at median, objects %.0f%%; preprocessing %.0f%% of a compile, on the client; remote speeds %.1f-%.1fx\n\n",
		c.LatencyNs/1e3, c.BandwidthBps/1e6, c.SourceBytes/1e6, 100*c.ObjectRatio, 100*c.PreprocessFraction, c.SpeedMin, c.SpeedMax)
	fmt.Fprintf(stdout, "%5s  %-14s %9s %15s %8s %10s %8s %9s\n", "hosts", "strategy", "makespan", "(min-max)", "remote", "local CPU", "uplink", "slow-host")
	for _, row := range res.Rows {
		for _, s := range row.Strategies {
			fmt.Fprintf(stdout, "%5d  %-14s %8.2fs %15s %7.1f%% %9.1f%% %7.1f%% %8.1f%%\n", row.Hosts, s.Name, s.MakespanS,
				fmt.Sprintf("(%.2f-%.2f)", s.MinS, s.MaxS),
				100*s.RemoteFraction, 100*s.LocalUtil, 100*s.UplinkUtil, 100*s.SlowHostShare)
		}
	}
	return exitOK
}
