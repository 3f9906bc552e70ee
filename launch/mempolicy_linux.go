package launch

import (
	"bytes"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// onlineNodes returns the machine's online NUMA nodes, read below sys
// ("/sys" for the machine); empty on a kernel without NUMA. It reads with
// plain system calls: os.ReadFile would set up the runtime's poller
// (epoll) for the one file.
func onlineNodes(sys string) cpuset.Set {
	fd, err := unix.Open(sys+"/devices/system/node/online", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return cpuset.Set{}
	}
	defer unix.Close(fd)
	var buf [256]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil || n <= 0 {
		return cpuset.Set{}
	}
	online, err := cpuset.Parse(string(bytes.TrimSpace(buf[:n])))
	if err != nil {
		return cpuset.Set{}
	}
	return online
}

// preferNode sets the calling thread's memory policy to prefer the node
// the grant names (MPOL_PREFERRED), on a machine of more than one online
// node (online, from onlineNodes). The command forked or exec'd from this
// thread keeps the policy (fork copies it, execve keeps it), and so do its
// children: its pages come from that node while the node has free pages,
// then from the nearest others. The thread is the launcher's locked main
// thread, which never runs another goroutine. A refused policy (a
// memory-less node, one outside the cpuset's mems) leaves the default,
// local allocation: it costs only placement.
func preferNode(grant Msg, online cpuset.Set) {
	node, ok := grant.Int("node")
	if !ok || node < 0 || online.Len() < 2 || !online.Contains(int(node)) {
		return
	}
	_ = affinity.SetMemPolicy(affinity.Preferred, cpuset.Of(int(node)))
}
