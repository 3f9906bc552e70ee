package sim

import (
	"context"
	"slices"
	"testing"
)

func TestRunFarm(t *testing.T) {
	res, err := RunFarm(context.Background(), FarmOptions{Hosts: []int{1, 4, 16}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tasks != kbCompiles+kbLinks+1 || len(res.Rows) != 3 {
		t.Fatalf("result %+v", res)
	}
	one := res.Rows[0].Strategies
	for _, s := range one[1:] {
		// One host: nothing can go remote, so the strategies in make's
		// order are the same local build, and critical-path order is no
		// slower.
		if s.MakespanS != one[1].MakespanS || s.RemoteFraction != 0 {
			t.Errorf("1 host: %+v differs from %+v", s, one[1])
		}
	}
	if one[0].Name != "numasteal" || one[0].MakespanS > one[1].MakespanS {
		t.Errorf("1 host: critical-path order %+v slower than make's %+v", one[0], one[1])
	}
	for _, row := range res.Rows[1:] {
		for i, s := range row.Strategies {
			if s.MakespanS >= one[i].MakespanS {
				t.Errorf("%d hosts, %s: makespan %.2fs not below one host's %.2fs", row.Hosts, s.Name, s.MakespanS, one[i].MakespanS)
			}
			if s.RemoteFraction <= 0 {
				t.Errorf("%d hosts, %s: nothing went remote", row.Hosts, s.Name)
			}
		}
	}
	// No schedule beats the critical path; with 16 hosts numasteal's is
	// within a few percent of it (the long compile starts first, locally).
	for r := range uint64(5) {
		e := newFarmSim(FarmOptions{CPUsPerHost: 16, Cost: res.Cost}, 1+r, 16, "numasteal")
		path := slices.Max(criticalPaths(e.jobs)) / 1e9
		st := e.run()
		if st.MakespanS < path || st.MakespanS > 1.05*path {
			t.Errorf("seed %d: makespan %.2fs, critical path %.2fs", 1+r, st.MakespanS, path)
		}
	}
	again, _ := RunFarm(context.Background(), FarmOptions{Hosts: []int{1, 4, 16}, Seed: 1})
	for i := range res.Rows {
		for k := range res.Rows[i].Strategies {
			if res.Rows[i].Strategies[k] != again.Rows[i].Strategies[k] {
				t.Errorf("not reproducible: %+v vs %+v", res.Rows[i].Strategies[k], again.Rows[i].Strategies[k])
			}
		}
	}
	if _, err := RunFarm(context.Background(), FarmOptions{Strategies: []string{"nope"}}); err == nil {
		t.Error("unknown strategy accepted")
	}
}

func BenchmarkRunFarm16(b *testing.B) {
	b.ReportAllocs()
	for range b.N {
		RunFarm(context.Background(), FarmOptions{Hosts: []int{16}, Seed: 1})
	}
}
