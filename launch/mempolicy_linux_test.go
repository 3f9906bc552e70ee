package launch

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// TestPreferNode sets the policy on this test's locked thread for grants
// on fixture machines of one and two nodes; node 0, which the policy
// names, must exist on the machine that runs the test.
func TestPreferNode(t *testing.T) {
	if _, err := os.Stat("/sys/devices/system/node/node0"); err != nil {
		t.Skipf("SKIP: this machine has no NUMA node 0 to prefer: %v", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, err := affinity.GetMemPolicy()
	if err != nil {
		t.Fatal(err)
	}
	if start.Mode != affinity.Default {
		t.Skipf("SKIP: the test runs under memory policy %s (numactl?)", start)
	}
	defer affinity.SetMemPolicy(affinity.Default, cpuset.Set{})
	sys := func(online string) string {
		dir := t.TempDir()
		if online != "" {
			os.MkdirAll(filepath.Join(dir, "devices/system/node"), 0o755)
			if err := os.WriteFile(filepath.Join(dir, "devices/system/node/online"), []byte(online+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	tests := []struct {
		name   string
		grant  Msg
		online string
		want   affinity.MemPolicy
	}{
		{"one node", NewMsg("grant", "cpu", "0", "node", "0"), "0", affinity.MemPolicy{Mode: affinity.Default}},
		{"no NUMA in the kernel", NewMsg("grant", "cpu", "0", "node", "0"), "", affinity.MemPolicy{Mode: affinity.Default}},
		{"no node in the grant", NewMsg("grant", "host", "h"), "0-1", affinity.MemPolicy{Mode: affinity.Default}},
		{"node -1", NewMsg("grant", "cpu", "-1", "node", "-1"), "0-1", affinity.MemPolicy{Mode: affinity.Default}},
		{"a node not online", NewMsg("grant", "cpu", "0", "node", "2"), "0-1", affinity.MemPolicy{Mode: affinity.Default}},
		{"two nodes", NewMsg("grant", "cpu", "0", "node", "0"), "0-1", affinity.MemPolicy{Mode: affinity.Preferred, Nodes: cpuset.Of(0)}},
	}
	for _, tt := range tests {
		preferNode(tt.grant, onlineNodes(sys(tt.online)))
		got, err := affinity.GetMemPolicy()
		if err != nil {
			t.Fatal(err)
		}
		if got.Mode != tt.want.Mode || !got.Nodes.Equal(tt.want.Nodes) {
			t.Errorf("%s: policy %s, want %s", tt.name, got, tt.want)
		}
		if err := affinity.SetMemPolicy(affinity.Default, cpuset.Set{}); err != nil {
			t.Fatal(err)
		}
	}
}
