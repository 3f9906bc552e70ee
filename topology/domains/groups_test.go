package domains

import (
	"slices"
	"testing"
)

// TestBuildGroups checks the groups against the examples worked out in
// the comments of kernel/sched/topology.c.
func TestBuildGroups(t *testing.T) {
	tests := []struct {
		name   string
		matrix [][]int
		// want[cpu] lists the CPU's domains as "span:groups".
		want map[int][]string
	}{{
		name:   "ring",
		matrix: [][]int{{10, 20, 30, 20}, {20, 10, 20, 30}, {30, 20, 10, 20}, {20, 30, 20, 10}},
		want: map[int][]string{
			// "For instance Node-0 NUMA-2 would only get groups: 0-1,3
			// and 1-3."
			0: {"0-1,3:{0}{1}{3}", "0-3:{0-1,3}{1-3}"},
			1: {"0-2:{1}{2}{0}", "0-3:{0-2}{0,2-3}"},
		},
	}, {
		name:   "asymmetric (topology.c: nodes 1,2 fully connected, 0,3 not)",
		matrix: [][]int{{10, 20, 20, 30}, {20, 10, 20, 20}, {20, 20, 10, 20}, {30, 20, 20, 10}},
		want: map[int][]string{
			0: {"0-2:{0}{1}{2}", "0-3:{0-2}{1-3}"},
			1: {"0-3:{1}{2}{3}{0}"},
			2: {"0-3:{2}{3}{0}{1}"},
			3: {"1-3:{3}{1}{2}", "0-3:{1-3}{0-2}"},
		},
	}, {
		name:   "diameter 3 (find_descended_sibling)",
		matrix: [][]int{{10, 20, 30, 40}, {20, 10, 20, 30}, {30, 20, 10, 20}, {40, 30, 20, 10}},
		want: map[int][]string{
			0: {"0-1:{0}{1}", "0-2:{0-1}{2}", "0-3:{0-2}{1-3}"},
			1: {"0-2:{1}{2}{0}", "0-3:{0-2}{2-3}"},
			2: {"1-3:{2}{3}{1}", "0-3:{1-3}{0-1}"},
			3: {"2-3:{3}{2}", "1-3:{2-3}{1}", "0-3:{1-3}{0-2}"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			top := synthMachine{
				cpus:  synthGrid(4, 1, 1, func(p, _ int) int { return p }),
				nodes: []int{0, 1, 2, 3}, matrix: tt.matrix,
			}.build(t)
			d, err := Build(top)
			if err != nil {
				t.Fatal(err)
			}
			checkDomains(t, top, d)
			for cpu, want := range tt.want {
				var got []string
				for _, dom := range d.Chain(cpu) {
					got = append(got, dom.Span.String()+":"+groupSummary(dom))
				}
				if !slices.Equal(got, want) {
					t.Errorf("CPU %d:\n got %q\nwant %q", cpu, got, want)
				}
			}
		})
	}
}
