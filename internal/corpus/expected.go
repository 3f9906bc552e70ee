package corpus

import (
	"encoding/json"
	"strconv"
)

// Expected is the part of a machine's expected.json that tests compare
// against: hwloc 2.9's view of the dump. CPU and node numbers are Linux's;
// CPU lists are sorted. The corpus README documents every field.
type Expected struct {
	Name         string `json:"name"`
	Archive      string `json:"archive"`
	SysfsRoot    string `json:"sysfs_root"`
	Architecture string `json:"architecture"`
	CPUModel     string `json:"cpu_model"`
	Notes        string `json:"notes"`

	// Counts of hwloc objects in the default (cgroup-restricted) view.
	Packages int `json:"packages"`
	Cores    int `json:"cores"`
	PUs      int `json:"pus"`

	PUIndexes    []int `json:"pu_os_indexes"`
	AllowedCPUs  []int `json:"allowed_cpus"`
	AllowedNodes []int `json:"allowed_nodes"`
	CompleteCPUs []int `json:"complete_cpus"`

	NUMANodes []ExpectedNode `json:"numa_nodes"`
	// Distances is hwloc's matrix over DistanceNodes, nil when hwloc has
	// none.
	Distances       [][]int `json:"distances"`
	DistanceNodes   []int   `json:"distances_os_indexes"`
	KernelDistances *struct {
		Nodes  []int   `json:"node_os_indexes"`
		Matrix [][]int `json:"matrix"`
	} `json:"kernel_distances"`

	// Caches maps "L1d", "L1i", "L2", "L3" to the instances hwloc kept, or
	// nil for a level the machine lacks.
	Caches map[string]*ExpectedCache `json:"caches"`

	PackageList []ExpectedGroup `json:"package_list"`
	CoreList    []ExpectedGroup `json:"core_list"`

	CPUKinds []ExpectedKind `json:"cpu_kinds"`

	Variants map[string]json.RawMessage `json:"variants"`
}

// ExpectedNode is one NUMA node of hwloc's view.
type ExpectedNode struct {
	ID int `json:"os_index"`
	// CPUs are the usable CPUs hwloc puts near the node: for CPU-less
	// nodes possibly derived from HMAT initiators or distances.
	CPUs        []int  `json:"cpus"`
	MemoryBytes int64  `json:"memory_bytes"`
	KernelCPUs  []int  `json:"kernel_cpus"` // raw cpulist; nil without a node dir
	Subtype     string `json:"subtype"`
}

// ExpectedCache is one cache level.
type ExpectedCache struct {
	Count     int    `json:"count"`
	Type      string `json:"type"`
	LineSize  int    `json:"linesize"`
	Instances []struct {
		SizeBytes int64 `json:"size_bytes"`
		CPUs      []int `json:"cpus"`
	} `json:"instances"`
}

// ExpectedGroup is a package or core: the usable CPUs in it (empty for a
// package hwloc keeps only because it holds an allowed NUMA node).
type ExpectedGroup struct {
	ID   *int  `json:"os_index"`
	CPUs []int `json:"cpus"`
}

// ExpectedKind is one CPU kind, least efficient first.
type ExpectedKind struct {
	CPUs  []int             `json:"cpus"`
	Infos map[string]string `json:"infos"`
}

// InfoInt returns info key as a number, 0 when absent or not a number.
func (k ExpectedKind) InfoInt(key string) int {
	v, _ := strconv.Atoi(k.Infos[key])
	return v
}

// Variant decodes variants[name] (only nvidiagpunumanodes has one:
// gpu_numa_nodes_kept, hwloc's view with HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES=1).
func (e *Expected) Variant(name string) (*Expected, bool) {
	raw, ok := e.Variants[name]
	if !ok {
		return nil, false
	}
	var v Expected
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false
	}
	return &v, true
}
