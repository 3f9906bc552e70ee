package domains

import (
	"slices"
	"testing"
)

func TestBuildParams(t *testing.T) {
	// 2 packages (one node each) x 2 cores x 2 threads, L3 per package,
	// distance 40: SMT, LLC, NUMA/40.
	m := synthMachine{
		cpus:  synthGrid(2, 2, 2, func(p, _ int) int { return p }),
		llc:   []string{"0-3", "4-7"},
		nodes: []int{0, 1}, matrix: [][]int{{10, 40}, {40, 10}},
	}
	type want struct {
		name            LevelName
		imbalance, nice int
		flags           Flags
		imbNUMA         int
	}
	base := FlagBalanceNewIdle | FlagBalanceExec | FlagBalanceFork | FlagWakeAffine | FlagPreferSibling
	wants := []want{
		{SMT, 110, 0, base | FlagShareCPUCapacity | FlagShareLLC, 0},
		{LLC, 117, 1, base | FlagShareLLC, 0},
		// 40 > RECLAIM_DISTANCE: no exec/fork balancing, no wake-affine.
		// imb_numa_nr: the level above the LLC (the node, one LLC)
		// gets max(1, 4>>3) = 1, scaled by 8/8 at the first NUMA level.
		{NUMA, 125, 2, FlagBalanceNewIdle | FlagNUMA | FlagSerialize | FlagOverlap, 1},
	}
	d, err := Build(m.build(t))
	if err != nil {
		t.Fatal(err)
	}
	chain := d.Chain(0)
	if len(chain) != len(wants) {
		t.Fatalf("CPU 0 has %d domains, want %d: %q", len(chain), len(wants), levelsSummary(d))
	}
	for i, w := range wants {
		p := chain[i].Params
		if chain[i].Level.Name != w.name || p.ImbalancePct != w.imbalance || p.CacheNiceTries != w.nice || p.Flags != w.flags || p.ImbNUMANr != w.imbNUMA {
			t.Errorf("domain %d: %s pct %d nice %d flags %s imb %d; want %s pct %d nice %d flags %s imb %d",
				i, chain[i].Level.Name, p.ImbalancePct, p.CacheNiceTries, p.Flags, p.ImbNUMANr,
				w.name, w.imbalance, w.nice, w.flags, w.imbNUMA)
		}
		if d.Levels[i].Params != p {
			t.Errorf("level %s params %+v, domain's %+v", d.Levels[i].Name, d.Levels[i].Params, p)
		}
	}

	// Distance 20 is within RECLAIM_DISTANCE: fork/exec/wake-affine stay.
	m.matrix = [][]int{{10, 20}, {20, 10}}
	d, err = Build(m.build(t))
	if err != nil {
		t.Fatal(err)
	}
	if f := d.Chain(0)[2].Params.Flags; f != base&^FlagPreferSibling|FlagNUMA|FlagSerialize|FlagOverlap {
		t.Errorf("NUMA/20 flags %s", f)
	}

	// AMD Zen raises node_reclaim_distance to 32.
	m.matrix = [][]int{{10, 32}, {32, 10}}
	for _, zen := range []bool{false, true} {
		m.amdZen = zen
		d, err = Build(m.build(t))
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Chain(0)[2].Params.Flags&FlagWakeAffine != 0; got != zen {
			t.Errorf("distance 32, AMD Zen %v: wake-affine %v", zen, got)
		}
	}
}

func TestBuildAsymCapacity(t *testing.T) {
	// One package: cluster {0,1} of big cores, cluster {2,3} of little ones.
	cpus := synthGrid(1, 4, 1, func(int, int) int { return 0 })
	for i := range cpus {
		cpus[i].cluster = i / 2
		cpus[i].capacity = []int{1024, 1024, 512, 512}[i]
	}
	top := synthMachine{cpus: cpus, l2: []string{"0-1", "2-3"}, llc: []string{"0-3"}}.build(t)
	d, err := Build(top)
	if err != nil {
		t.Fatal(err)
	}
	checkDomains(t, top, d)
	if got, want := levelsSummary(d), []string{"CLUSTER {0-1}{2-3}", "LLC {0-3}"}; !slices.Equal(got, want) {
		t.Errorf("levels %q, want %q", got, want)
	}
	chain := d.Chain(0)
	outer := chain[len(chain)-1]
	if outer.Params.Flags&(FlagAsymCapacity|FlagAsymCapacityFull) != FlagAsymCapacity|FlagAsymCapacityFull {
		t.Errorf("outer domain %s flags %s, want ASYM_CPUCAPACITY_FULL", outer.Span, outer.Params.Flags)
	}
	inner := chain[0]
	if inner.Params.Flags&(FlagAsymCapacity|FlagPreferSibling) != 0 {
		t.Errorf("inner domain %s flags %s: want no asymmetry and no PREFER_SIBLING below an asymmetric parent", inner.Span, inner.Params.Flags)
	}
}
