package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
)

// The farm level of the simulator: kernbench (the same job graph as the
// machine-level simulation) built on a compile farm of N hosts of C CPUs
// each, host 0 being the machine that runs make. Inside a host the CPUs
// are a pool (the machine-level simulator covers placement there); this
// level models what only a farm has:
//
//   - host speeds: the remote hosts compile SpeedMin..SpeedMax times as
//     fast as the local one (uniform, from the seed), unknown to the
//     placement until it measures them;
//   - the network: per remote job a connection round trip, the
//     preprocessed source sent over the client's uplink and the object
//     back over its downlink, each a FIFO link of Bandwidth shared by all
//     jobs, plus one-way latency;
//   - plain-mode distcc: a remote compile is preprocessed first on a
//     local CPU (PreprocessFraction of its work), so a busy client slows
//     its whole farm.
//
// make runs with -j (C × N): one job per CPU of the farm. A compile goes
// where the strategy says; links always run locally. Strategies:
//
//   - numasteal: what `numasteal run --farm` does with a history of
//     earlier runs: ready jobs start in critical-path order (longest
//     path to the end first, as buildgraph.Scheduler orders them), each
//     on a local CPU while a local job slot is free, else on farm.Farm's
//     best-scored host (the real placement code, on virtual time), else
//     locally;
//   - numasteal-fifo: the same placement with make's order, to separate
//     the two effects;
//   - distcc: DISTCC_HOSTS order, "localhost/C h1/C h2/C ...": the first
//     host with a free slot (distcc's own strategy, no --randomize);
//   - random: a uniformly random host with a free slot.

// FarmCost is the farm level's cost model. Zero fields take the
// defaults in brackets (guesses for a 1 GbE farm with lzo-less distcc).
type FarmCost struct {
	// LatencyNs is the one-way network latency [250µs]; a remote job pays
	// a connection round trip plus one latency each way.
	LatencyNs float64
	// BandwidthBps is the client's link speed each way, bytes per second
	// [125e6, 1 Gbit/s].
	BandwidthBps float64
	// SourceBytes is the preprocessed size of a compile of median length
	// (0.46 s); a compile's size scales with its length [1 MB].
	SourceBytes float64
	// ObjectRatio is the object's size over the preprocessed source's
	// [0.1].
	ObjectRatio float64
	// PreprocessFraction is the share of a compile's work that is
	// preprocessing, done locally for a remote compile [0.1].
	PreprocessFraction float64
	// SpeedMin and SpeedMax bound the remote hosts' speeds relative to the
	// local one [0.5, 1.5].
	SpeedMin, SpeedMax float64
}

func (c *FarmCost) defaults() {
	def := func(v *float64, d float64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.LatencyNs, 250e3)
	def(&c.BandwidthBps, 125e6)
	def(&c.SourceBytes, 1e6)
	def(&c.ObjectRatio, 0.1)
	def(&c.PreprocessFraction, 0.1)
	def(&c.SpeedMin, 0.5)
	def(&c.SpeedMax, 1.5)
}

// FarmOptions configure RunFarm. Zero fields mean defaults.
type FarmOptions struct {
	// Hosts are the farm sizes to simulate, host 0 (the client) included;
	// nil means 1, 2, 4, 8, 16, 64.
	Hosts []int
	// CPUsPerHost is every host's CPU count [16].
	CPUsPerHost int
	// Strategies to compare; nil means FarmStrategies().
	Strategies []string
	// Seed makes the workload and host speeds reproducible.
	Seed uint64
	// Runs is how many seeds (Seed, Seed+1, ...) each figure is the mean
	// of [5]: one seed's makespan hangs on where its longest compile
	// lands.
	Runs int
	// Cost is the cost model.
	Cost FarmCost
}

// FarmResult is the outcome of RunFarm.
type FarmResult struct {
	// Workload is the workload simulated: always "kernbench".
	Workload string `json:"workload"`
	// CPUsPerHost is every host's CPU count.
	CPUsPerHost int `json:"cpus_per_host"`
	// Seed is the first seed; the runs use Seed, Seed+1, ...
	Seed uint64 `json:"seed"`
	// Runs is how many seeds each figure is the mean of.
	Runs int `json:"runs"`
	// Tasks is the number of jobs in the build graph.
	Tasks int `json:"tasks"`
	// Cost is the cost model used, defaults filled in.
	Cost FarmCost `json:"cost"`
	// Rows are the farm sizes, in the order of FarmOptions.Hosts.
	Rows []FarmRow `json:"rows"`
}

// FarmRow is one farm size.
type FarmRow struct {
	// Hosts is the farm's size, the client included.
	Hosts int `json:"hosts"`
	// Strategies are the strategies' figures, in the order of
	// FarmOptions.Strategies.
	Strategies []FarmStats `json:"strategies"`
}

// FarmStats are one strategy's figures on one farm, means over the
// runs.
type FarmStats struct {
	// Name is the strategy's name (one of FarmStrategies).
	Name string `json:"name"`
	// MakespanS is the virtual time from the first job to the last, in
	// seconds.
	MakespanS float64 `json:"makespan_s"`
	// MinS and MaxS are the makespan's range over the runs (not in the
	// JSON).
	MinS, MaxS float64 `json:"-"`
	// RemoteFraction is the share of compiles that ran remotely.
	RemoteFraction float64 `json:"remote_fraction"`
	// LocalUtil is the client's busy CPU time over makespan × CPUs.
	LocalUtil float64 `json:"local_util"`
	// UplinkUtil is the client's uplink busy time over the makespan.
	UplinkUtil float64 `json:"uplink_util"`
	// SlowHostShare is the share of remote compile work done on hosts
	// slower than the client.
	SlowHostShare float64 `json:"slow_host_share"`
}

// FarmStrategies lists the strategy names RunFarm accepts.
func FarmStrategies() []string { return []string{"numasteal", "numasteal-fifo", "distcc", "random"} }

// RunFarm simulates kernbench on each farm size under each strategy.
func RunFarm(ctx context.Context, o FarmOptions) (FarmResult, error) {
	o.Cost.defaults()
	if o.CPUsPerHost <= 0 {
		o.CPUsPerHost = 16
	}
	if o.Hosts == nil {
		o.Hosts = []int{1, 2, 4, 8, 16, 64}
	}
	if o.Runs <= 0 {
		o.Runs = 5
	}
	if o.Strategies == nil {
		o.Strategies = FarmStrategies()
	}
	for _, s := range o.Strategies {
		if !slices.Contains(FarmStrategies(), s) {
			return FarmResult{}, fmt.Errorf("sim: farm: unknown strategy %q (known: numasteal, numasteal-fifo, distcc, random)", s)
		}
	}
	res := FarmResult{Workload: "kernbench", CPUsPerHost: o.CPUsPerHost, Seed: o.Seed, Runs: o.Runs, Cost: o.Cost}
	for _, n := range o.Hosts {
		if n < 1 {
			return res, fmt.Errorf("sim: farm: %d hosts: want at least 1", n)
		}
		row := FarmRow{Hosts: n}
		for _, s := range o.Strategies {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			var sum FarmStats
			for r := range o.Runs {
				e := newFarmSim(o, o.Seed+uint64(r), n, s)
				st := e.run()
				res.Tasks = len(e.jobs)
				if r == 0 || st.MakespanS < sum.MinS {
					sum.MinS = st.MakespanS
				}
				sum.MaxS = max(sum.MaxS, st.MakespanS)
				sum.MakespanS += st.MakespanS
				sum.RemoteFraction += st.RemoteFraction
				sum.LocalUtil += st.LocalUtil
				sum.UplinkUtil += st.UplinkUtil
				sum.SlowHostShare += st.SlowHostShare
			}
			k := float64(o.Runs)
			row.Strategies = append(row.Strategies, FarmStats{Name: s, MakespanS: sum.MakespanS / k,
				MinS: sum.MinS, MaxS: sum.MaxS, RemoteFraction: sum.RemoteFraction / k, LocalUtil: sum.LocalUtil / k,
				UplinkUtil: sum.UplinkUtil / k, SlowHostShare: sum.SlowHostShare / k})
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// hostSpeeds returns n speeds: the client's 1, then the remote hosts'
// drawn from the seed (the same for every strategy).
func hostSpeeds(n int, seed uint64, c FarmCost) []float64 {
	r := rand.New(rand.NewPCG(seed^0xFA53, seed+7))
	s := []float64{1}
	for range n - 1 {
		s = append(s, c.SpeedMin+(c.SpeedMax-c.SpeedMin)*r.Float64())
	}
	return s
}
