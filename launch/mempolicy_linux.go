package launch

import (
	"os"
	"strings"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// preferNode sets the calling thread's memory policy to prefer the node
// the grant names (MPOL_PREFERRED), on a machine of more than one online
// node (online, below sys; "/sys" for the machine). The command forked or
// exec'd from this thread keeps the policy (fork copies it, execve keeps
// it), and so do its children: its pages come from that node while the
// node has free pages, then from the nearest others. The thread is the
// launcher's locked main thread, which never runs another goroutine. A
// refused policy (a memory-less node, one outside the cpuset's mems)
// leaves the default, local allocation: it costs only placement.
func preferNode(grant Msg, sys string) {
	node, ok := grant.Int("node")
	if !ok || node < 0 {
		return
	}
	b, err := os.ReadFile(sys + "/devices/system/node/online")
	if err != nil {
		return // a kernel without NUMA: one node
	}
	online, err := cpuset.Parse(strings.TrimSpace(string(b)))
	if err != nil || online.Len() < 2 || !online.Contains(int(node)) {
		return
	}
	_ = affinity.SetMemPolicy(affinity.Preferred, cpuset.Of(int(node)))
}
