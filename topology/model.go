package topology

import (
	"slices"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// Topology is a read-only model of one machine as Linux describes it under
// /sys/devices/system/{cpu,node}, restricted to what this process may use.
// It is built by Discover and never changed afterwards, so it may be shared
// by any number of goroutines.
//
// Numbers are the kernel's: a CPU id is N in cpuN, a node id is N in nodeN.
// Packages, dies, clusters and cores are identified by their position in the
// slices below (their Index); their kernel ids are kept as well because the
// kernel reuses core_id across packages.
type Topology struct {
	// Root is the file-system root that was read ("/" for the live machine).
	Root string
	// Live reports whether this is the machine the process runs on, in which
	// case the affinity mask and CPUID were consulted as well.
	Live bool

	// Arch is the machine architecture ("x86_64", "aarch64", ...) when known.
	Arch string
	// CPUInfo describes the processor: from CPUID on the live machine, from
	// proc/cpuinfo in a dump; zero fields are unknown.
	CPUInfo CPUInfo

	// Possible, Present and Online are the kernel's cpu/possible, present
	// and online masks (Online falls back to every cpuN directory whose
	// online file is not 0 when cpu/online is missing).
	Possible, Present, Online cpuset.Set
	// Allowed is what the process may run on: the affinity mask (live only)
	// intersected with the cgroup cpuset. It may name offline CPUs.
	Allowed cpuset.Set
	// Usable = Online ∩ Allowed: the CPUs a runtime should put workers on.
	Usable cpuset.Set
	// AllowedNodes are the nodes whose memory the process may use: the
	// cgroup's cpuset.mems (and Mems_allowed_list of proc/self/status when
	// present), every online node when unrestricted. The kernel leaves
	// memory-less nodes out of cpuset.mems.
	AllowedNodes cpuset.Set

	// CPUs holds every online CPU, usable or not, sorted by ID.
	CPUs []CPU
	// Packages, Dies, Clusters and Cores hold the groups of online CPUs,
	// each sorted by its first CPU. A machine whose kernel reports no
	// die or cluster has one die per package and one cluster per core.
	Packages []Group
	Dies     []Group
	Clusters []Group
	Cores    []Group
	// Caches holds one entry per cache instance (level, type, sharing CPUs),
	// sorted by level, then type, then first CPU. Memory-side caches are not
	// here.
	Caches []Cache
	// Nodes holds the online NUMA nodes in AllowedNodes plus the
	// memory-less nodes that have a usable CPU, sorted by ID; CPU-less and
	// memory-less nodes included. A machine without a node/ directory has
	// one node 0 spanning every CPU.
	Nodes []Node
	// Distances is the node distance table over Nodes, or nil when there
	// are fewer than two nodes or the kernel gives no distance files.
	Distances *Distances
	// Kinds lists the CPU kinds on hybrid machines (by cpu_capacity or
	// max frequency), least capable first; nil on homogeneous machines.
	Kinds []Kind
	// Quota is the cgroup CPU bandwidth limit, nil when unlimited.
	Quota *Quota
	// Notes records oddities found and how they were handled, such as
	// a BIOS-bugged NUMA table or CPUs outside every online node.
	Notes []string
}

// CPU is one hardware thread (a "PU" in hwloc's words).
type CPU struct {
	ID int
	// Package, Die, Cluster and Core index the Topology slices of the same
	// name.
	Package, Die, Cluster, Core int
	// PackageID, DieID, ClusterID and CoreID are the kernel's
	// topology/*_id values (-1 where the kernel reports -1 or nothing).
	PackageID, DieID, ClusterID, CoreID int
	// Node is the NUMA node id, or -1 when the CPU is in no online node.
	Node int
	// Capacity is cpu_capacity (1024 = the biggest core); 0 when unknown.
	Capacity int
	// MaxFreqKHz is cpufreq/cpuinfo_max_freq; 0 when unknown.
	MaxFreqKHz int
	// BaseFreqKHz is cpufreq/base_frequency (intel_pstate); 0 when unknown.
	BaseFreqKHz int
	// Kind indexes Topology.Kinds, or -1 on a homogeneous machine.
	Kind int
	// Usable reports whether the CPU is in Topology.Usable.
	Usable bool
}

// Group is a package, die, cluster or core: a set of online CPUs with the
// kernel's id for it.
type Group struct {
	Index int        // position in its Topology slice
	ID    int        // kernel id (physical_package_id, die_id, cluster_id, core_id)
	CPUs  cpuset.Set // online CPUs, usable or not
}

// CacheType is the kind of a cache as cache/indexN/type says.
type CacheType string

// The cache types Linux reports.
const (
	Data        CacheType = "data"
	Instruction CacheType = "instruction"
	Unified     CacheType = "unified"
)

// Cache is one cache instance.
type Cache struct {
	Level     int
	Type      CacheType
	SizeBytes int64 // 0 when unknown
	LineSize  int   // coherency_line_size; 0 when unknown
	Ways      int   // ways_of_associativity; 0 when unknown
	CPUs      cpuset.Set
}

// Node is a NUMA node.
type Node struct {
	ID int
	// CPUs are the node's online CPUs (kernel cpulist ∩ online); Usable
	// are those also allowed.
	CPUs, Usable cpuset.Set
	// MemoryBytes is MemTotal from nodeN/meminfo (proc/meminfo when there
	// is no node directory); 0 for a memory-less node.
	MemoryBytes int64
	// HasMemory reports whether the node has memory at all.
	HasMemory bool
	// GPUBusID is the PCI address of the NVIDIA GPU whose memory this
	// CPU-less node is (proc/driver/nvidia/gpus/*/numa_status), "" for an
	// ordinary node. hwloc hides such nodes on POWER; we keep them so that
	// memory policies can name them, and schedulers skip them because they
	// have no CPU.
	GPUBusID string
}

// Distances is the NUMA distance table (SLIT values: 10 = local).
type Distances struct {
	Nodes  []int   // node ids, in the order of rows and columns
	Matrix [][]int // Matrix[i][j] = distance from Nodes[i] to Nodes[j]
}

// Between returns the distance from node a to node b, or 0 when either is
// not in the table.
func (d *Distances) Between(a, b int) int {
	if d == nil {
		return 0
	}
	i, j := -1, -1
	for k, id := range d.Nodes {
		if id == a {
			i = k
		}
		if id == b {
			j = k
		}
	}
	if i < 0 || j < 0 {
		return 0
	}
	return d.Matrix[i][j]
}

// Kind is a class of CPUs on a hybrid machine.
type Kind struct {
	Index       int
	Capacity    int // cpu_capacity shared by the kind; 0 when unknown
	MaxFreqKHz  int // cpuinfo_max_freq shared by the kind; 0 when unknown
	BaseFreqKHz int // base_frequency shared by the kind; 0 when unknown
	CPUs        cpuset.Set
}

// Quota is a cgroup CPU bandwidth limit (cgroup v2 cpu.max, or v1
// cpu.cfs_quota_us / cpu.cfs_period_us).
type Quota struct {
	QuotaMicros, PeriodMicros int64
	// File is the file the quota came from, relative to Root.
	File string
}

// Parallelism returns quota/period, the number of CPUs' worth of time the
// cgroup may use.
func (q *Quota) Parallelism() float64 {
	return float64(q.QuotaMicros) / float64(q.PeriodMicros)
}

// CPUInfo identifies the processor.
type CPUInfo struct {
	Vendor    string   // "GenuineIntel", "AuthenticAMD", ...
	Model     string   // brand string
	Family    int      // -1 when unknown
	ModelID   int      // -1 when unknown
	Features  []string // sorted feature flags, live machine only
	FromCPUID bool     // whether CPUID supplied these fields
}

// EffectiveParallelism is how many CPUs the process can keep busy at once:
// the usable CPU count, lowered to the cgroup quota (rounded up) if there is
// one. It is never below 1.
func (t *Topology) EffectiveParallelism() int {
	n := t.Usable.Len()
	if t.Quota != nil && t.Quota.PeriodMicros > 0 {
		q := int((t.Quota.QuotaMicros + t.Quota.PeriodMicros - 1) / t.Quota.PeriodMicros)
		n = min(n, q)
	}
	return max(n, 1)
}

// CPU returns the online CPU with kernel id id; ok is false when there is
// no such online CPU.
func (t *Topology) CPU(id int) (CPU, bool) {
	i, ok := t.cpuIndex(id)
	if !ok {
		return CPU{}, false
	}
	return t.CPUs[i], true
}

// cpuIndex returns the position of CPU id in t.CPUs.
func (t *Topology) cpuIndex(id int) (int, bool) {
	i, ok := slices.BinarySearchFunc(t.CPUs, id, func(c CPU, id int) int { return c.ID - id })
	return i, ok
}

// Node returns the node with kernel id id among t.Nodes; ok is false when
// the node is not there (offline, dropped as a BIOS duplicate, or outside
// the cgroup's cpuset.mems).
func (t *Topology) Node(id int) (Node, bool) {
	i, ok := slices.BinarySearchFunc(t.Nodes, id, func(n Node, id int) int { return n.ID - id })
	if !ok {
		return Node{}, false
	}
	return t.Nodes[i], true
}

// NodeOf returns the NUMA node of online CPU cpu, or -1 when the CPU is not
// online or belongs to no online node. The node may be missing from
// t.Nodes when the cgroup forbids its memory.
func (t *Topology) NodeOf(cpu int) int {
	c, ok := t.CPU(cpu)
	if !ok {
		return -1
	}
	return c.Node
}
