package balance_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/balance"
)

func TestByName(t *testing.T) {
	for _, name := range append(balance.Names(), "") {
		p, err := balance.ByName(name)
		if err != nil {
			t.Fatalf("ByName(%q): %v", name, err)
		}
		want := name
		if name == "" {
			want = "hierarchical"
		}
		if p.Name() != want {
			t.Errorf("ByName(%q).Name() = %q, want %q", name, p.Name(), want)
		}
	}
	_, err := balance.ByName("random")
	if err == nil || !strings.Contains(err.Error(), `"random"`) {
		t.Errorf("ByName(random) = %v, want an error naming it", err)
	}
}

// TestFlatVictims checks that Flat offers every other CPU once, in a
// random order, with the level of the domain the two share.
func TestFlatVictims(t *testing.T) {
	b := bind(t, "16amd64-8n2c", "flat")
	th := b.Thief(4)
	if th.Steps() != 1 {
		t.Fatalf("Steps() = %d, want 1", th.Steps())
	}
	orders := map[string]bool{}
	for range 8 {
		vs := th.Victims(make([]balance.Victim, 0, b.MaxVictims()), 0, parseLoad(t, ""), balance.Search{})
		var cpus []int
		for _, v := range vs {
			cpus = append(cpus, v.CPU)
			if want := map[bool]int{true: 0, false: 1}[v.CPU == 5]; v.Level != want {
				t.Errorf("victim %d: level %d, want %d", v.CPU, v.Level, want)
			}
		}
		orders[strings.Join(itoas(cpus), ",")] = true
		slices.Sort(cpus)
		if want := []int{0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}; !slices.Equal(cpus, want) {
			t.Fatalf("victims %v, want every CPU but 4 once", cpus)
		}
	}
	if len(orders) < 2 {
		t.Errorf("8 passes gave the same order")
	}
	if busy := th.Victims(nil, 0, parseLoad(t, "0:R+5"), balance.Search{Mode: balance.Busy}); len(busy) != 0 {
		t.Errorf("Flat balances periodically: %v", busy)
	}
}

func itoas(l []int) []string {
	var out []string
	for _, x := range l {
		out = append(out, itoa(x))
	}
	return out
}

// TestLocalVictims checks that Local never leaves the node, except on the
// Final pass for work whose owner runs nothing (stranded work).
func TestLocalVictims(t *testing.T) {
	tests := []struct {
		name  string
		load  string
		final bool
		want  [][]int
	}{
		{"own node only", "5:R+1 0:R+3", false, [][]int{{5}, {}}},
		{"a remote queue with a running owner stays", "0:R+3", true, [][]int{{5}, {}}},
		{"stranded work is rescued on the Final pass", "0:+3", true, [][]int{{5}, {0}}},
		{"but not before", "0:+3", false, [][]int{{5}, {}}},
	}
	b := bind(t, "16amd64-8n2c", "local")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := victims(b.Thief(4), parseLoad(t, tt.load), balance.Search{Final: tt.final}, b.MaxVictims())
			if !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("victims = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBaselinePlace(t *testing.T) {
	b := bind(t, "16amd64-8n2c", "local")
	for _, c := range []struct {
		load string
		want int
	}{{"", 4}, {"4:R", 5}, {"4:R+1 5:R", 5}} {
		if got := b.Place(4, balance.PlaceFork, parseLoad(t, c.load)); got != c.want {
			t.Errorf("local: Place(4) with %q = %d, want %d", c.load, got, c.want)
		}
	}
	f := bind(t, "16amd64-8n2c", "flat")
	seen := map[int]bool{}
	for range 200 {
		c := f.Place(4, balance.PlaceFork, parseLoad(t, ""))
		if c < 0 || c > 15 {
			t.Fatalf("flat: Place = %d, not a CPU", c)
		}
		seen[c] = true
	}
	if len(seen) < 12 {
		t.Errorf("flat: 200 placements reached only %d of 16 CPUs", len(seen))
	}
}
