package balance_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/numasteal/numasteal/balance"
)

// TestHierarchicalVictims checks which victims an idle (or busy) CPU's
// pass yields, step by step (domain levels innermost first), on real
// machines. Loads are looked at 12 times first so the smoothed cpu_load
// has converged.
func TestHierarchicalVictims(t *testing.T) {
	tests := []struct {
		name    string
		machine string
		thief   int
		load    string
		mode    balance.Mode
		final   bool
		want    [][]int
	}{
		// 16amd64-8n2c: 8 nodes of 2 CPUs at distance 20; steps are
		// PACKAGE (the node) then NUMA(20) over all 16.
		{"nearest level first", "16amd64-8n2c", 4, "5:R+1 0:R+3 1:R", balance.NewlyIdle, false,
			[][]int{{5}, {0}}},
		{"busiest group, busiest queue first", "16amd64-8n2c", 4, "0:R+1 1:R 10:R+2 11:R+3", balance.NewlyIdle, false,
			[][]int{{5}, {11, 10}}},
		{"imbalance_pct holds back a remote steal", "16amd64-8n2c", 4, "5:R+2 0:R+1 1:R", balance.NewlyIdle, false,
			[][]int{{5}, {}}},
		{"the Final pass drops imbalance_pct", "16amd64-8n2c", 4, "5:R+2 0:R+1 1:R", balance.NewlyIdle, true,
			[][]int{{5}, {0}}},
		// A step whose local group is the thief alone lists every CPU
		// it adds, queued work or not (the steal itself checks): {5}.
		{"a node with an idle CPU keeps its work", "16amd64-8n2c", 4, "0:R+3", balance.NewlyIdle, false,
			[][]int{{5}, {}}},
		{"...even on the Final pass", "16amd64-8n2c", 4, "0:R+3", balance.NewlyIdle, true,
			[][]int{{5}, {}}},
		{"...its own idle CPU takes it", "16amd64-8n2c", 1, "0:R+3", balance.NewlyIdle, false,
			[][]int{{0}, {}}},
		{"should_we_balance: the first idle CPU of the group balances", "16amd64-8n2c", 4, "0:R+3 1:R", balance.NewlyIdle, false,
			[][]int{{5}, {0}}},
		{"should_we_balance: the others do not", "16amd64-8n2c", 5, "0:R+3 1:R", balance.NewlyIdle, false,
			[][]int{{4}, {}}},
		{"busy: a one-task difference is not worth a pull", "16amd64-8n2c", 4, "4:R 5:R 0:R+1 1:R", balance.Busy, false,
			[][]int{{}, {}}},
		{"busy: a real imbalance is", "16amd64-8n2c", 4, "4:R 5:R 0:R+3 1:R+3", balance.Busy, false,
			[][]int{{}, {0, 1}}},
		// 128ia64-17n4s2c: PACKAGE (2 CPUs), NODE (8), NUMA(17) (4
		// nodes), NUMA(20) (all 128).
		// CPUs 0-7 run, so 9 is the first idle CPU of its NUMA groups
		// (should_we_balance); CPUs 96-127 all run, so that group has no
		// idle CPU left to take its own work.
		{"four levels, nearest first", "128ia64-17n4s2c", 9, busy(0, 7) + " 8:R+2 " + busy(96, 127) + " 100:R+5", balance.NewlyIdle, false,
			[][]int{{8}, {}, {}, {100}}},
		{"the node before the NUMA levels", "128ia64-17n4s2c", 9, busy(0, 8) + " 12:R+2 13:R " + busy(96, 127) + " 100:R+5", balance.NewlyIdle, false,
			[][]int{{8}, {12}, {}, {100}}},
		{"a pair with an idle CPU keeps its work", "128ia64-17n4s2c", 9, busy(0, 8) + " 12:R+2 " + busy(96, 127) + " 100:R+5", balance.NewlyIdle, false,
			[][]int{{8}, {}, {}, {100}}},
		{"not the first idle CPU of its group: no NUMA balancing", "128ia64-17n4s2c", 9, "8:R+2 " + busy(96, 127) + " 100:R+5", balance.NewlyIdle, false,
			[][]int{{8}, {}, {}, {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bind(t, tt.machine, "hierarchical")
			th := b.Thief(tt.thief)
			if th == nil {
				t.Fatalf("no thief for CPU %d", tt.thief)
			}
			load := parseLoad(t, tt.load)
			s := balance.Search{Mode: tt.mode, Final: tt.final}
			for range 12 {
				victims(th, load, balance.Search{Mode: tt.mode}, b.MaxVictims())
			}
			got := victims(th, load, s, b.MaxVictims())
			if !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("victims of CPU %d with %q = %v, want %v", tt.thief, tt.load, got, tt.want)
			}
		})
	}
}

// busy returns a load string with CPUs lo..hi running.
func busy(lo, hi int) string {
	s := ""
	for c := lo; c <= hi; c++ {
		s += " " + itoa(c) + ":R"
	}
	return s
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestHierarchicalInterval checks the remote level's balance interval: it
// doubles when the level is found balanced, the level is skipped until it
// expires, and a successful steal resets it.
func TestHierarchicalInterval(t *testing.T) {
	b := bind(t, "16amd64-8n2c", "hierarchical")
	th := b.Thief(4)
	unit := balance.NewHierarchical(balance.HierarchicalConfig{}).Config().IntervalUnit
	minIv := 16 * int64(unit) // min_interval = span weight (16)
	idle := parseLoad(t, "")
	work := parseLoad(t, "0:R+3 1:R+3")
	buf := make([]balance.Victim, 0, b.MaxVictims())

	// Balanced at t=0: the interval doubles to 2*min.
	s := balance.Search{Now: 0}
	if vs := th.Victims(buf[:0], 1, idle, s); len(vs) != 0 {
		t.Fatalf("idle machine: victims %v", vs)
	}
	th.Done(1, 0, s)
	for _, c := range []struct {
		now  int64
		want int
	}{{1, 0}, {2*minIv - 1, 0}, {2 * minIv, 2}} {
		vs := th.Victims(buf[:0], 1, work, balance.Search{Now: c.now})
		if len(vs) != c.want {
			t.Errorf("at %v after a balanced look: %d victims, want %d", time.Duration(c.now), len(vs), c.want)
		}
	}
	// A steal resets the interval to min.
	s = balance.Search{Now: 2 * minIv}
	th.Victims(buf[:0], 1, work, s)
	th.Done(1, 2, s)
	if vs := th.Victims(buf[:0], 1, work, balance.Search{Now: 3*minIv - 1}); len(vs) != 0 {
		t.Errorf("before min_interval after a steal: %v", vs)
	}
	if vs := th.Victims(buf[:0], 1, work, balance.Search{Now: 3 * minIv}); len(vs) == 0 {
		t.Errorf("after min_interval after a steal: no victims")
	}
}

// TestHierarchicalStealAmount checks HotSLAW's growth: one task inside
// the node, StealGrowth times more per level beyond the LLC.
func TestHierarchicalStealAmount(t *testing.T) {
	b := bind(t, "128ia64-17n4s2c", "hierarchical")
	th := b.Thief(9)
	load := parseLoad(t, "8:R+9 12:R+9 13:R "+busy(0, 7)+" 2:R+9 "+busy(96, 127)+" 100:R+9")
	want := []int{2, 4, 8, 16} // PACKAGE, NODE, NUMA(17), NUMA(20): no level here shares the LLC
	buf := make([]balance.Victim, 0, b.MaxVictims())
	for step := range th.Steps() {
		var got []balance.Victim
		for range 12 {
			got = th.Victims(buf[:0], step, load, balance.Search{Final: true})
		}
		if len(got) == 0 || got[0].Max != want[step] {
			t.Errorf("step %d: victims %v, want Max %d", step, got, want[step])
		}
	}
}

// TestHierarchicalCacheHot checks can_migrate_task's hysteresis: a task
// that ran within migration_cost stays until the level failed more than
// cache_nice_tries (2 at NUMA levels) times.
func TestHierarchicalCacheHot(t *testing.T) {
	b := bind(t, "16amd64-8n2c", "hierarchical")
	th := b.Thief(4)
	hot, cold := int64(100*time.Microsecond), int64(time.Millisecond)
	if th.MayMigrate(1, hot) {
		t.Error("a task that ran 100µs ago moves before any failure")
	}
	if !th.MayMigrate(1, cold) || !th.MayMigrate(1, -1) {
		t.Error("a cold or never-run task may not move")
	}
	load := parseLoad(t, "4:R 5:R 0:R+3 1:R+3")
	buf := make([]balance.Victim, 0, b.MaxVictims())
	for i := range 3 {
		s := balance.Search{Mode: balance.Busy, Now: int64(i) * int64(time.Second)}
		if vs := th.Victims(buf[:0], 1, load, s); len(vs) == 0 {
			t.Fatalf("attempt %d: no imbalance found", i)
		}
		th.Done(1, 0, s) // imbalanced, but every task was hot
		if got, want := th.MayMigrate(1, hot), i == 2; got != want {
			t.Errorf("after %d failures: MayMigrate(hot) = %v, want %v", i+1, got, want)
		}
	}
}

// TestHierarchicalPlace checks find_idlest_cpu's walk: stay put while
// the local group is not more loaded than the idlest by half the margin,
// fill the node before leaving it, then go to the idlest node, the
// nearest first when the far levels do not balance on exec.
func TestHierarchicalPlace(t *testing.T) {
	tests := []struct {
		name    string
		machine string
		from    int
		kind    balance.PlaceKind
		load    string
		want    int
	}{
		{"idle machine: stay", "16amd64-8n2c", 4, balance.PlaceFork, "", 4},
		{"busy CPU: its idle sibling", "16amd64-8n2c", 4, balance.PlaceFork, "4:R", 5},
		{"busy node: the next idle node", "16amd64-8n2c", 4, balance.PlaceFork, "4:R 5:R", 6},
		{"the idlest node, not the next", "16amd64-8n2c", 4, balance.PlaceExec, "4:R 5:R 6:R", 8},
		{"queued work counts", "16amd64-8n2c", 4, balance.PlaceExec, "4:R+2 5:R 6:R 7:R 8:R 9:R 10:R 11:R 12:R 13:R 14:R 15:R 0:R 1:R 2:R 3:R", 6},
		// Nodes 0, 2 and 3 are all at distance 17 from node 1; the groups
		// are walked from the CPU's own onwards, wrapping (as the
		// kernel's sched_group ring), and ties keep the first.
		{"128 CPUs: a node at distance 17", "128ia64-17n4s2c", 9, balance.PlaceExec, busy(8, 15), 16},
		{"128 CPUs: the idlest node at distance 17", "128ia64-17n4s2c", 9, balance.PlaceExec, busy(8, 23), 24},
		{"128 CPUs: node full nearby, go far", "128ia64-17n4s2c", 9, balance.PlaceExec, busy(0, 31), 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bind(t, tt.machine, "hierarchical")
			if got := b.Place(tt.from, tt.kind, parseLoad(t, tt.load)); got != tt.want {
				t.Errorf("Place(%d, %v) with %q = %d, want %d", tt.from, tt.kind, tt.load, got, tt.want)
			}
		})
	}
}

// TestHierarchicalBalanceFailed checks the failure count behind the
// cache-hot hysteresis, as load_balance keeps nr_balance_failed: a
// periodic pass (Idle or Busy) that found an imbalance and moved nothing
// counts; a newly idle one does not; a pass that finds the level balanced
// or moves a task clears the count; and the innermost step's pass without
// statistics (the local group is the thief alone) neither counts nor
// clears. After the passes, a hot task (ran 100µs ago) may move only when
// the count exceeds the level's cache_nice_tries.
func TestHierarchicalBalanceFailed(t *testing.T) {
	type pass struct {
		mode  balance.Mode
		load  string
		taken int
	}
	rep := func(n int, p pass) []pass {
		ps := make([]pass, n)
		for i := range ps {
			ps[i] = p
		}
		return ps
	}
	cat := func(pss ...[]pass) []pass {
		var out []pass
		for _, ps := range pss {
			out = append(out, ps...)
		}
		return out
	}
	// 16amd64-8n2c, thief 4: step 0 is its node (PACKAGE, cache_nice_tries
	// 1, the thief alone in its group), step 1 NUMA(20) (cache_nice_tries
	// 2). 128ia64-17n4s2c, thief 9: step 1 is NODE (pairs of CPUs,
	// cache_nice_tries 1).
	numaIdle := pass{balance.Idle, "0:R+3 1:R+3", 0}
	numaNewIdle := pass{balance.NewlyIdle, "0:R+3 1:R+3", 0}
	numaBusy := pass{balance.Busy, "4:R 5:R 0:R+3 1:R+3", 0}
	tests := []struct {
		name    string
		machine string
		thief   int
		step    int
		passes  []pass
		want    bool
	}{
		{"two idle failures: within cache_nice_tries", "16amd64-8n2c", 4, 1, rep(2, numaIdle), false},
		{"three idle failures: beyond it", "16amd64-8n2c", 4, 1, rep(3, numaIdle), true},
		{"three busy failures", "16amd64-8n2c", 4, 1, rep(3, numaBusy), true},
		{"newly idle failures do not count", "16amd64-8n2c", 4, 1, rep(6, numaNewIdle), false},
		{"...nor clear it", "16amd64-8n2c", 4, 1, cat(rep(2, numaBusy), rep(2, numaNewIdle), rep(1, numaBusy)), true},
		{"a balanced pass clears it", "16amd64-8n2c", 4, 1, cat(rep(2, numaIdle), rep(1, pass{balance.Idle, "", 0}), rep(2, numaIdle)), false},
		{"a move clears it", "16amd64-8n2c", 4, 1, cat(rep(2, numaIdle), rep(1, pass{balance.Idle, "0:R+3 1:R+3", 1}), rep(2, numaIdle)), false},
		{"the pass without statistics does not count", "16amd64-8n2c", 4, 0, rep(4, pass{balance.Idle, "5:R+2", 0}), false},
		{"...nor clears it", "16amd64-8n2c", 4, 0,
			cat(rep(1, pass{balance.Busy, "4:R 5:R+5", 0}), rep(2, pass{balance.Idle, "5:R+5", 0}), rep(1, pass{balance.Busy, "4:R 5:R+5", 0})), true},
		{"a pair level: one failure", "128ia64-17n4s2c", 9, 1, rep(1, pass{balance.Busy, "8:R 9:R 12:R+4 13:R+4", 0}), false},
		{"a pair level: two failures", "128ia64-17n4s2c", 9, 1, rep(2, pass{balance.Busy, "8:R 9:R 12:R+4 13:R+4", 0}), true},
		{"a pair level: idle failures count too", "128ia64-17n4s2c", 9, 1, rep(2, pass{balance.Idle, "12:R+4 13:R+4", 0}), true},
	}
	hot := int64(100 * time.Microsecond)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := bind(t, tt.machine, "hierarchical")
			th := b.Thief(tt.thief)
			buf := make([]balance.Victim, 0, b.MaxVictims())
			for i, p := range tt.passes {
				// A second apart: every interval has expired.
				s := balance.Search{Mode: p.mode, Now: int64(i+1) * int64(time.Second)}
				vs := th.Victims(buf[:0], tt.step, parseLoad(t, p.load), s)
				if p.load != "" && len(vs) == 0 {
					t.Fatalf("pass %d (%v, %q): no victims", i, p.mode, p.load)
				}
				th.Done(tt.step, p.taken, s)
			}
			if got := th.MayMigrate(tt.step, hot); got != tt.want {
				t.Errorf("after %d passes: MayMigrate(hot) = %v, want %v", len(tt.passes), got, tt.want)
			}
		})
	}
}

// TestHierarchicalZeroValue checks that the zero Hierarchical is the
// default policy: the same settings, and the same victims with the same
// steal amounts, on a NUMA machine.
func TestHierarchicalZeroValue(t *testing.T) {
	var zero balance.Hierarchical
	def := balance.NewHierarchical(balance.HierarchicalConfig{})
	if zero.Config() != def.Config() {
		t.Fatalf("zero Config %+v, default %+v", zero.Config(), def.Config())
	}
	topo, doms := machine(t, "16amd64-8n2c")
	load := parseLoad(t, "0:R+3 1:R+3 5:R+8")
	var got [2][]balance.Victim
	for i, p := range []balance.Policy{&zero, def} {
		b, err := p.Bind(topo, doms, topo.Usable, 1)
		if err != nil {
			t.Fatal(err)
		}
		th := b.Thief(4)
		for step := range th.Steps() {
			got[i] = append(got[i], th.Victims(make([]balance.Victim, 0, b.MaxVictims()), step, load, balance.Search{Final: true})...)
		}
	}
	if len(got[0]) == 0 || !slices.Equal(got[0], got[1]) {
		t.Errorf("victims of the zero policy %v, of the default %v", got[0], got[1])
	}
}
