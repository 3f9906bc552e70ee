package daemon

import (
	"github.com/numasteal/numasteal/memory"
	"github.com/numasteal/numasteal/topology"
)

// nodePlacer moves a job off the node the balancer chose when the node's
// free memory does not cover the job's need ("Placement" in the package
// documentation). Its methods are called with Server.mu held.
type nodePlacer struct {
	// nodes are the nodes a job may be moved to: with usable CPUs and
	// memory the process may use.
	nodes []placeNode
	// free returns a node's free memory (memory.NodeMemory.Free); an
	// error leaves the node out.
	free func(node int) (int64, error)
	// held returns what the processes of a running job, below its
	// launcher's pid, hold now (memory.TreeRSS).
	held func(pid int) int64
}

// placeNode is a node jobs may be moved to, with its usable CPUs.
type placeNode struct {
	id   int
	cpus []int
}

// newNodePlacer returns the placer of topo, reading node memory below
// the topology's root (the machine's, or a dump's in tests) and the jobs'
// processes in /proc; nil (no placement by memory) when fewer than two
// nodes qualify.
func newNodePlacer(topo *topology.Topology) *nodePlacer {
	root := topo.Root
	if root == "" {
		root = "/"
	}
	np := &nodePlacer{
		free: func(node int) (int64, error) {
			m, err := memory.ReadNode(root, node)
			return m.Free, err
		},
		held: func(pid int) int64 { return memory.TreeRSS("/proc", pid) },
	}
	for _, n := range topo.Nodes {
		if n.Usable.IsEmpty() || !n.HasMemory || !topo.AllowedNodes.Contains(n.ID) {
			continue
		}
		np.nodes = append(np.nodes, placeNode{id: n.ID, cpus: n.Usable.IDs()})
	}
	if len(np.nodes) < 2 {
		return nil
	}
	return np
}

// place returns the CPU for j, which the balancer placed on j.cpu: that
// CPU when its node's room (free memory less what the jobs running there
// are still expected to take) covers j's need; else the idlest CPU of the
// node whose room covers it (the one with the least loaded idlest CPU,
// then the most room), or of the node with the most room when none
// does. A CPU on a node whose memory the placer does not know (a
// memory-less node, one outside the process's cpuset.mems, a meminfo
// that cannot be read) stays: its memory comes from elsewhere anyway.
// A nil placer keeps every choice.
func (np *nodePlacer) place(p *pool, j *job) int {
	if np == nil || j.cpu < 0 || j.need <= 0 {
		return j.cpu
	}
	chosen := p.nodeOf(j.cpu)
	if np.index(chosen) < 0 {
		return j.cpu
	}
	free, err := np.free(chosen)
	if err != nil {
		return j.cpu
	}
	// The room counting every running job's whole need is the least the
	// node can have: when that fits, no process needs reading.
	if free-np.pending(p, chosen, false) >= j.need {
		return j.cpu
	}
	best, bestRoom := -1, int64(0)
	bestCPU, bestLoad, bestFits := -1, 0, false
	for _, n := range np.nodes {
		f := free
		if n.id != chosen {
			if f, err = np.free(n.id); err != nil {
				continue
			}
		}
		room := f - np.pending(p, n.id, true)
		fits := room >= j.need
		if n.id == chosen && fits {
			return j.cpu
		}
		cpu, load := idlestOf(p, n.cpus)
		better := best < 0 || (fits && !bestFits)
		if !better && fits == bestFits {
			if fits {
				better = load < bestLoad || (load == bestLoad && room > bestRoom)
			} else {
				better = room > bestRoom
			}
		}
		if better {
			best, bestRoom, bestCPU, bestLoad, bestFits = n.id, room, cpu, load, fits
		}
	}
	if best < 0 || best == chosen {
		return j.cpu
	}
	return bestCPU
}

// index returns the position of node id in np.nodes, -1 when absent.
func (np *nodePlacer) index(id int) int {
	for i, n := range np.nodes {
		if n.id == id {
			return i
		}
	}
	return -1
}

// pending returns the memory the local jobs running on node are still
// expected to take: each one's need less what its processes hold now
// (read only when measured is set; else the whole need, an upper bound).
func (np *nodePlacer) pending(p *pool, node int, measured bool) int64 {
	var sum int64
	for _, r := range p.running {
		if r.lease != nil || r.cpu < 0 || p.nodeOf(r.cpu) != node {
			continue
		}
		left := r.need
		if measured && r.pid > 0 {
			left -= np.held(r.pid)
		}
		sum += max(left, 0)
	}
	return sum
}

// idlestOf returns the CPU of cpus with the fewest running jobs (the
// first of those tied) and its count.
func idlestOf(p *pool, cpus []int) (cpu, load int) {
	cpu, load = -1, 0
	for _, c := range cpus {
		l := 0
		if c < len(p.perCPU) {
			l = p.perCPU[c]
		}
		if cpu < 0 || l < load {
			cpu, load = c, l
		}
	}
	return cpu, load
}
