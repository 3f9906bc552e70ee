package domains

import (
	"testing"
)

func TestFlagsString(t *testing.T) {
	for _, tt := range []struct {
		f    Flags
		want string
	}{
		{0, "0"},
		{FlagBalanceNewIdle | FlagWakeAffine, "SD_BALANCE_NEWIDLE|SD_WAKE_AFFINE"},
		{FlagNUMA | FlagOverlap, "SD_NUMA|SD_OVERLAP"},
	} {
		if got := tt.f.String(); got != tt.want {
			t.Errorf("Flags(%#x).String() = %q, want %q", uint32(tt.f), got, tt.want)
		}
	}
}

func TestHighestLowest(t *testing.T) {
	top := synthMachine{
		cpus:  synthGrid(2, 2, 2, func(p, _ int) int { return p }),
		llc:   []string{"0-3", "4-7"},
		nodes: []int{0, 1}, matrix: [][]int{{10, 20}, {20, 10}},
	}.build(t)
	d, err := Build(top)
	if err != nil {
		t.Fatal(err)
	}
	if llc := d.Highest(5, FlagShareLLC); llc == nil || llc.Span.String() != "4-7" {
		t.Errorf("Highest(5, FlagShareLLC) = %v, want the 4-7 domain", llc)
	}
	if numa := d.Lowest(5, FlagNUMA); numa == nil || numa.Span.String() != "0-7" {
		t.Errorf("Lowest(5, FlagNUMA) = %v, want the 0-7 domain", numa)
	}
	if got := d.Lowest(5, FlagCluster); got != nil {
		t.Errorf("Lowest(5, FlagCluster) = %v, want nil", got)
	}
	if got := d.Chain(99); got != nil {
		t.Errorf("Chain(99) = %v, want nil", got)
	}
}
