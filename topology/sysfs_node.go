package topology

import (
	"fmt"
	"slices"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// nodeScan is what readNodes learns before the cgroup restriction is known.
type nodeScan struct {
	// online are the kernel's online node ids in increasing order (the
	// order of the values in every nodeN/distance row), possible the
	// kernel's possible nodes (some hand-edited dumps write rows for those).
	online, possible []int
	// nodes are the online nodes kept (BIOS duplicates dropped), by id.
	nodes []Node
	// fromSysfs is false when there is no node directory and nodes holds
	// one made-up node 0.
	fromSysfs bool
}

// readNodes reads sys/devices/system/node: the online nodes, each one's
// CPUs (cpulist, or cpumap on old kernels), MemTotal and whether it holds
// NVIDIA GPU memory, and sets CPU.Node.
//
// Nodes whose CPUs overlap those of a node with a smaller id are dropped:
// Linux never puts a CPU in two nodes, so overlap means a BIOS that copied
// one node's affinity into every SRAT entry (8em64t-2s2ca2c-buggynuma: 8
// nodes that all hold all CPUs). hwloc keeps the first node and so do we,
// with a note; the distance matrix then covers the nodes kept.
//
// Without a node directory (kernels built without NUMA, 2arm-2c, s390)
// there is one node 0 holding every online CPU and proc/meminfo's
// MemTotal.
func (d *discoverer) readNodes() (nodeScan, error) {
	var ns nodeScan
	t := d.t
	online, hasOnline, err := d.r.list(nodeDir + "/online")
	if err != nil {
		return ns, err
	}
	if !hasOnline {
		names, ok, err := d.r.names(nodeDir)
		if err != nil {
			return ns, err
		}
		if ok {
			for _, n := range names {
				if id, ok := parseNumbered(n, "node"); ok {
					online.Add(id)
				}
			}
		}
	}
	if online.IsEmpty() {
		return d.singleNode()
	}
	ns.fromSysfs = true
	ns.online = online.IDs()
	if possible, ok, err := d.r.list(nodeDir + "/possible"); err != nil {
		return ns, err
	} else if ok {
		ns.possible = possible.IDs()
	}
	hasMemory, hasMemoryFile, err := d.r.list(nodeDir + "/has_memory")
	if err != nil {
		return ns, err
	}
	gpus, err := d.nvidiaGPUNodes()
	if err != nil {
		return ns, err
	}

	// Read every node's CPUs and memory (in parallel: 64 nodes are 128
	// files), then keep them in id order.
	type nodeFiles struct {
		kernel        cpuset.Set
		found         bool
		memory        int64
		hasMemoryInfo bool
	}
	files := make([]nodeFiles, len(ns.online))
	cpus := newAlts(false, "cpumap", "cpulist")
	read := func(r *reader, i int, a *alts) error {
		dir := nodeDir + "/node" + itoa(ns.online[i])
		kernel, ok, err := r.setAlt(dir, a)
		if err != nil || !ok {
			return err
		}
		f := nodeFiles{kernel: kernel, found: true}
		data, ok, err := r.read(dir + "/meminfo")
		if err != nil {
			return err
		}
		if ok {
			total, line, err := parseMemTotal(data)
			if err != nil {
				return &FileError{Path: dir + "/meminfo", Text: clip(line), Err: err}
			}
			f.memory, f.hasMemoryInfo = total, true
		}
		files[i] = f
		return nil
	}
	if err := read(d.r, 0, cpus); err != nil {
		return ns, err
	}
	if err := d.parallel(len(ns.online)-1, func(r *reader, i int) error {
		a := *cpus
		return read(r, i+1, &a)
	}); err != nil {
		return ns, err
	}
	var seen cpuset.Set // CPUs of the nodes kept so far
	var dropped, missing, memless cpuset.Set
	for i, id := range ns.online {
		f := files[i]
		if !f.found {
			missing.Add(id)
			continue
		}
		if f.kernel.Intersects(seen) {
			dropped.Add(id)
			continue
		}
		seen = seen.Union(f.kernel)
		node := Node{ID: id, CPUs: f.kernel.Intersect(t.Online), GPUBusID: gpus[id], MemoryBytes: f.memory}
		node.HasMemory = node.MemoryBytes > 0
		if hasMemoryFile {
			node.HasMemory = hasMemory.Contains(id)
		}
		if !node.HasMemory {
			memless.Add(id)
		}
		ns.nodes = append(ns.nodes, node)
	}
	if !missing.IsEmpty() {
		d.note("NUMA nodes %s are online but have no cpulist or cpumap; they are left out", missing)
	}
	if !dropped.IsEmpty() {
		d.note("NUMA nodes %s repeat CPUs of a lower node (BIOS-bugged SRAT); kept the first, dropped these", dropped)
	}
	if len(ns.nodes) == 0 {
		return ns, &FileError{Path: nodeDir, Err: fmt.Errorf("no readable NUMA node: %w", ErrMissing)}
	}
	if !memless.IsEmpty() {
		d.note("NUMA nodes %s have no memory", memless)
	}
	var cpuless, gpu cpuset.Set
	for _, n := range ns.nodes {
		if n.CPUs.IsEmpty() {
			cpuless.Add(n.ID)
		}
		if n.GPUBusID != "" {
			gpu.Add(n.ID)
		}
	}
	if !cpuless.IsEmpty() {
		d.note("NUMA nodes %s have no online CPU", cpuless)
	}
	if !gpu.IsEmpty() {
		d.note("NUMA nodes %s hold NVIDIA GPU memory (kept as CPU-less nodes, see Node.GPUBusID; hwloc hides them on POWER)", gpu)
	}
	d.assignNodes(ns.nodes)
	return ns, nil
}

// singleNode makes the one node 0 of a machine without a node directory.
func (d *discoverer) singleNode() (nodeScan, error) {
	node := Node{ID: 0, CPUs: d.t.Online.Clone(), HasMemory: true}
	data, ok, err := d.r.read("proc/meminfo")
	if err != nil {
		return nodeScan{}, err
	}
	if ok {
		total, line, err := parseMemTotal(data)
		if err != nil {
			return nodeScan{}, &FileError{Path: "proc/meminfo", Text: clip(line), Err: err}
		}
		node.MemoryBytes = total
	}
	d.note("no %s: one NUMA node 0 with every CPU and proc/meminfo's memory", nodeDir)
	ns := nodeScan{online: []int{0}, possible: []int{0}, nodes: []Node{node}}
	d.assignNodes(ns.nodes)
	return ns, nil
}

// assignNodes sets CPU.Node and notes CPUs in no node.
func (d *discoverer) assignNodes(nodes []Node) {
	t := d.t
	for _, n := range nodes {
		for c := range n.CPUs.All() {
			if i, ok := t.cpuIndex(c); ok {
				t.CPUs[i].Node = n.ID
			}
		}
	}
	var orphans cpuset.Set
	for _, c := range t.CPUs {
		if c.Node < 0 {
			orphans.Add(c.ID)
		}
	}
	if !orphans.IsEmpty() {
		d.note("online CPUs %s are in no online NUMA node (Node = -1)", orphans)
	}
}

// nvidiaGPUNodes maps NUMA node ids to the PCI address of the NVIDIA GPU
// whose memory they are, from proc/driver/nvidia/gpus/*/numa_status (the
// files hwloc reads to hide such nodes).
func (d *discoverer) nvidiaGPUNodes() (map[int]string, error) {
	const dir = "proc/driver/nvidia/gpus"
	names, ok, err := d.r.names(dir)
	if err != nil || !ok {
		return nil, err
	}
	slices.Sort(names)
	m := make(map[int]string)
	for _, bus := range names {
		rel := dir + "/" + bus + "/numa_status"
		data, ok, err := d.r.read(rel)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		node, ok, line, err := parseNvidiaNUMAStatus(data)
		if err != nil {
			return nil, &FileError{Path: rel, Text: clip(line), Err: err}
		}
		if ok {
			m[node] = bus
		}
	}
	return m, nil
}

// readDistances builds the distance table over t.Nodes from their
// nodeN/distance rows. Each row holds one value per online node in
// increasing id order; a row with one value per possible node (a dump
// whose node 0 was taken offline by hand, offline-cpu0-node0) is read in
// possible-node order. With fewer than two nodes there is no table.
func (d *discoverer) readDistances(ns nodeScan) error {
	t := d.t
	if len(t.Nodes) < 2 || !ns.fromSysfs {
		return nil
	}
	m := &Distances{Nodes: make([]int, len(t.Nodes)), Matrix: make([][]int, len(t.Nodes))}
	for i, n := range t.Nodes {
		m.Nodes[i] = n.ID
	}
	rows := make([][]int, len(t.Nodes))
	absentRow := make([]bool, len(t.Nodes))
	if err := d.parallel(len(t.Nodes), func(r *reader, i int) error {
		rel := nodeDir + "/node" + itoa(t.Nodes[i].ID) + "/distance"
		s, ok, err := r.text(rel)
		if err != nil {
			return err
		}
		if !ok {
			absentRow[i] = true
			return nil
		}
		row, err := parseDistanceRow(s)
		if err != nil {
			return &FileError{Path: rel, Text: clip(s), Err: err}
		}
		order := ns.online
		if len(row) != len(order) {
			if len(row) != len(ns.possible) {
				return &FileError{Path: rel, Text: clip(s), Err: fmt.Errorf(
					"%d distances for %d online nodes: %w", len(row), len(ns.online), ErrRange)}
			}
			order = ns.possible
		}
		rows[i] = make([]int, len(t.Nodes))
		for j, to := range t.Nodes {
			k, found := slices.BinarySearch(order, to.ID)
			if !found {
				return &FileError{Path: rel, Text: clip(s), Err: fmt.Errorf(
					"no distance to node %d: %w", to.ID, ErrMissing)}
			}
			rows[i][j] = row[k]
		}
		return nil
	}); err != nil {
		return err
	}
	for i, n := range t.Nodes {
		if absentRow[i] {
			d.note("no %s/node%d/distance: no distance table", nodeDir, n.ID)
			return nil
		}
	}
	m.Matrix = rows
	t.Distances = m
	return nil
}
