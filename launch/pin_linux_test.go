package launch

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// TestPin: the granted CPU pins the thread on a machine of two online
// nodes, and leaves its mask alone on one node, with no node list, and
// for a grant without a CPU.
func TestPin(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, err := affinity.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	defer affinity.PinThread(start)
	cpu := start.IDs()[0]
	grant := NewMsg("grant", "cpu", strconv.Itoa(cpu), "node", "0")
	tests := []struct {
		name   string
		grant  Msg
		online cpuset.Set
		want   cpuset.Set
	}{
		{"one node", grant, cpuset.Of(0), start},
		{"no NUMA in the kernel", grant, cpuset.Set{}, start},
		{"no CPU in the grant", NewMsg("grant", "host", "h"), cpuset.Of(0, 1), start},
		{"CPU -1", NewMsg("grant", "cpu", "-1"), cpuset.Of(0, 1), start},
		{"two nodes", grant, cpuset.Of(0, 1), cpuset.Of(cpu)},
	}
	for _, tt := range tests {
		pin(tt.grant, tt.online)
		got, err := affinity.Allowed()
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(tt.want) {
			t.Errorf("%s: mask %s, want %s", tt.name, got, tt.want)
		}
		if err := affinity.PinThread(start); err != nil {
			t.Fatal(err)
		}
	}
}
