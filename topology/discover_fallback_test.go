package topology_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/topology"
)

// TestDiscoverFallbacks changes the tiny fixture the way old kernels,
// hand-edited dumps and other cgroup setups differ, and checks what
// Discover makes of it.
func TestDiscoverFallbacks(t *testing.T) {
	const (
		cpu  = "sys/devices/system/cpu/"
		node = "sys/devices/system/node/"
	)
	noCgroup := treeEdits{"proc/self/cgroup": rm, "proc/self/mountinfo": rm, "sys/fs/cgroup": rm}
	with := func(base treeEdits, more treeEdits) treeEdits {
		out := treeEdits{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range more {
			out[k] = v
		}
		return out
	}
	hasNote := func(t *testing.T, topo *topology.Topology, sub string) {
		t.Helper()
		if !slices.ContainsFunc(topo.Notes, func(n string) bool { return strings.Contains(n, sub) }) {
			t.Errorf("Notes %q lack %q", topo.Notes, sub)
		}
	}
	tests := []struct {
		name  string
		edits treeEdits
		check func(*testing.T, *topology.Topology)
	}{
		{"unrestricted", noCgroup, func(t *testing.T, topo *topology.Topology) {
			if topo.Usable.String() != "0-3" || topo.AllowedNodes.String() != "0-1" || topo.Quota != nil {
				t.Errorf("Usable %s AllowedNodes %s Quota %v", topo.Usable, topo.AllowedNodes, topo.Quota)
			}
		}},
		{"cgroup v1 with quota walk", with(noCgroup, treeEdits{
			"proc/self/cgroup": "5:cpuset:/job\n3:cpu,cpuacct:/job/step\n1:name=systemd:/x\n",
			"proc/self/mountinfo": "40 30 0:40 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n" +
				"41 30 0:41 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n",
			"sys/fs/cgroup/cpuset/job/cpuset.cpus":                 "1-3\n",
			"sys/fs/cgroup/cpuset/job/cpuset.mems":                 "1\n",
			"sys/fs/cgroup/cpu,cpuacct/job/step/cpu.cfs_quota_us":  "-1\n",
			"sys/fs/cgroup/cpu,cpuacct/job/step/cpu.cfs_period_us": "100000\n",
			"sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us":       "50000\n",
			"sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us":      "100000\n",
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us":           "300000\n",
			"sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us":          "100000\n",
		}), func(t *testing.T, topo *topology.Topology) {
			if topo.Usable.String() != "1-3" || topo.AllowedNodes.String() != "1" {
				t.Errorf("Usable %s AllowedNodes %s", topo.Usable, topo.AllowedNodes)
			}
			if len(topo.Nodes) != 1 || topo.Nodes[0].ID != 1 || topo.Distances != nil {
				t.Errorf("Nodes %v Distances %v; want node 1 only, no table", topo.Nodes, topo.Distances)
			}
			if q := topo.Quota; q == nil || q.Parallelism() != 0.5 || q.File != "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us" {
				t.Errorf("Quota = %+v, want 0.5 from job", q)
			}
			if topo.EffectiveParallelism() != 1 {
				t.Errorf("EffectiveParallelism = %d", topo.EffectiveParallelism())
			}
		}},
		{"old cpuset fs via proc/mounts", with(noCgroup, treeEdits{
			"proc/mounts":           "rootfs / rootfs rw 0 0\nnone /dev/cpuset cpuset rw 0 0\n",
			"proc/self/cpuset":      "/dummy\n",
			"dev/cpuset/dummy/cpus": "0,2\n",
			"dev/cpuset/dummy/mems": "0\n",
		}), func(t *testing.T, topo *topology.Topology) {
			if topo.Usable.String() != "0,2" || topo.AllowedNodes.String() != "0" {
				t.Errorf("Usable %s AllowedNodes %s", topo.Usable, topo.AllowedNodes)
			}
			if n, ok := topo.Node(0); !ok || n.Usable.String() != "0" {
				t.Errorf("Node(0) = %+v, %v", n, ok)
			}
			if _, ok := topo.Node(1); ok {
				t.Error("Node(1) is found although cpuset.mems forbids it")
			}
			if topo.NodeOf(2) != 1 {
				t.Errorf("NodeOf(2) = %d, want 1 (its node, even if disallowed)", topo.NodeOf(2))
			}
		}},
		{"cgroup v2 nested quota", with(noCgroup, treeEdits{
			"proc/self/cgroup":                 "0::/a/b\n",
			"proc/self/mountinfo":              "30 1 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			"sys/fs/cgroup/cgroup.controllers": "cpu memory\n",
			"sys/fs/cgroup/a/cpu.max":          "50000 100000\n",
			"sys/fs/cgroup/a/b/cpu.max":        "max 100000\n",
		}), func(t *testing.T, topo *topology.Topology) {
			if topo.Usable.String() != "0-3" {
				t.Errorf("Usable %s: no cpuset controller, nothing restricted", topo.Usable)
			}
			if q := topo.Quota; q == nil || q.Parallelism() != 0.5 || q.File != "sys/fs/cgroup/a/cpu.max" {
				t.Errorf("Quota = %+v, want 0.5 from a/cpu.max", q)
			}
		}},
		{"cgroup namespace root", with(noCgroup, treeEdits{
			"proc/self/cgroup":                    "0::/outside\n",
			"proc/self/mountinfo":                 "30 1 0:26 /inside /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			"sys/fs/cgroup/cgroup.controllers":    "cpuset\n",
			"sys/fs/cgroup/cpuset.cpus.effective": "0\n",
		}), func(t *testing.T, topo *topology.Topology) {
			if topo.Usable.String() != "0-3" {
				t.Errorf("Usable %s, want no restriction", topo.Usable)
			}
			hasNote(t, topo, "outside the cpuset mount")
		}},
		{"standard cgroup2 place without mount table", with(noCgroup, treeEdits{
			"proc/self/cgroup":                    "0::/\n",
			"sys/fs/cgroup/cpuset.cpus.effective": "2-3\n",
			"sys/fs/cgroup/cpuset.mems.effective": "1\n",
		}), func(t *testing.T, topo *topology.Topology) {
			if topo.Usable.String() != "2-3" || topo.AllowedNodes.String() != "1" {
				t.Errorf("Usable %s AllowedNodes %s", topo.Usable, topo.AllowedNodes)
			}
		}},
		{"status allowed list", with(noCgroup, treeEdits{
			"proc/self/status": "Name:\tx\nCpus_allowed_list:\t1-2\nMems_allowed_list:\t0-1\n",
		}), func(t *testing.T, topo *topology.Topology) {
			if topo.Usable.String() != "1-2" || topo.Allowed.String() != "1-2" {
				t.Errorf("Usable %s Allowed %s", topo.Usable, topo.Allowed)
			}
		}},
		{"no cpu/online: per-CPU online files", with(noCgroup, treeEdits{
			cpu + "online": rm, cpu + "possible": rm, cpu + "present": rm,
			cpu + "cpu1/online":   "\n", // empty, as in 128ia64-17n4s2c: online
			cpu + "cpu3/online":   "0\n",
			cpu + "cpu3/topology": rm, cpu + "cpu3/cache": rm,
			cpu + "cpu2/topology/core_cpus_list": "2\n",
		}), func(t *testing.T, topo *topology.Topology) {
			if topo.Online.String() != "0-2" || topo.Possible.String() != "0-3" || topo.Usable.String() != "0-2" {
				t.Errorf("Online %s Possible %s Usable %s", topo.Online, topo.Possible, topo.Usable)
			}
			if len(topo.Cores) != 2 || topo.Cores[1].CPUs.String() != "2" {
				t.Errorf("Cores %v", topo.Cores)
			}
			if n, _ := topo.Node(1); n.CPUs.String() != "2" {
				t.Errorf("node 1 CPUs %s, want the online ones", n.CPUs)
			}
		}},
		{"cpumap instead of cpulist, no node/online", with(noCgroup, treeEdits{
			node + "online": rm, node + "node0/cpulist": rm, node + "node1/cpulist": rm,
			node + "node0/cpumap": "00000003\n", node + "node1/cpumap": "0000000c\n",
		}), func(t *testing.T, topo *topology.Topology) {
			if len(topo.Nodes) != 2 || topo.Nodes[1].CPUs.String() != "2-3" || topo.Distances.Between(1, 0) != 20 {
				t.Errorf("Nodes %v Distances %v", topo.Nodes, topo.Distances)
			}
		}},
		{"no node directory", with(noCgroup, treeEdits{
			"sys/devices/system/node": rm,
			"proc/meminfo":            "MemTotal:        2048 kB\nMemFree: 1 kB\n",
		}), func(t *testing.T, topo *topology.Topology) {
			if len(topo.Nodes) != 1 || topo.Nodes[0].ID != 0 || topo.Nodes[0].MemoryBytes != 2<<20 ||
				!topo.Nodes[0].HasMemory || topo.Nodes[0].CPUs.String() != "0-3" || topo.Distances != nil {
				t.Errorf("Nodes %+v Distances %v", topo.Nodes, topo.Distances)
			}
			hasNote(t, topo, "one NUMA node 0")
		}},
		{"memory-less node outside Mems_allowed", with(noCgroup, treeEdits{
			node + "node1/meminfo": "Node 1 MemTotal: 0 kB\n",
			node + "has_memory":    "0\n",
			"proc/self/status":     "Cpus_allowed_list:\t0-3\nMems_allowed_list:\t0\n",
		}), func(t *testing.T, topo *topology.Topology) {
			n, ok := topo.Node(1)
			if !ok || n.HasMemory || n.Usable.String() != "2-3" || topo.AllowedNodes.String() != "0" || topo.Distances == nil {
				t.Errorf("Node(1) = %+v, %v; AllowedNodes %s; want node 1 kept for its CPUs", n, ok, topo.AllowedNodes)
			}
		}},
		{"sparse node ids", with(noCgroup, treeEdits{
			node + "online": "0,33\n", node + "node1": rm,
			node + "node33/cpulist": "2-3\n", node + "node33/distance": "21 10\n",
			node + "node33/meminfo": "Node 33 MemTotal: 0 kB\n",
			node + "node0/distance": "10 21\n",
		}), func(t *testing.T, topo *topology.Topology) {
			if topo.NodeOf(3) != 33 || topo.Distances.Between(0, 33) != 21 || topo.Distances.Between(33, 33) != 10 {
				t.Errorf("NodeOf(3) %d Distances %v", topo.NodeOf(3), topo.Distances)
			}
			if n, _ := topo.Node(33); n.HasMemory || n.MemoryBytes != 0 {
				t.Errorf("node 33 = %+v, want memory-less", n)
			}
			hasNote(t, topo, "NUMA nodes 33 have no memory")
		}},
		{"CPU in no node, row per possible node", with(noCgroup, treeEdits{
			node + "online": "1\n", node + "possible": "0-1\n", node + "node0": rm,
			node + "node1/distance": "21 10\n",
		}), func(t *testing.T, topo *topology.Topology) {
			if topo.NodeOf(0) != -1 || topo.NodeOf(2) != 1 || len(topo.Nodes) != 1 || topo.Distances != nil {
				t.Errorf("NodeOf(0) %d NodeOf(2) %d Nodes %v", topo.NodeOf(0), topo.NodeOf(2), topo.Nodes)
			}
			hasNote(t, topo, "in no online NUMA node")
		}},
		{"BIOS duplicate nodes", with(noCgroup, treeEdits{
			node + "online": "0-2\n", node + "node0/cpulist": "0-3\n", node + "node1/cpulist": "0-3\n",
			node + "node2/cpulist": "0-3\n", node + "node2/meminfo": "Node 2 MemTotal: 1 kB\n",
			node + "node0/distance": "10 20 20\n", node + "node1/distance": "20 10 20\n", node + "node2/distance": "20 20 10\n",
		}), func(t *testing.T, topo *topology.Topology) {
			if len(topo.Nodes) != 1 || topo.Nodes[0].CPUs.String() != "0-3" || topo.Distances != nil || topo.AllowedNodes.String() != "0" {
				t.Errorf("Nodes %v Distances %v AllowedNodes %s", topo.Nodes, topo.Distances, topo.AllowedNodes)
			}
			hasNote(t, topo, "BIOS-bugged")
		}},
		{"package id -1, core siblings = thread siblings", with(noCgroup, treeEdits{
			cpu + "cpu0/topology/physical_package_id": "-1", cpu + "cpu0/topology/package_cpus_list": "0-1",
			cpu + "cpu1/topology/physical_package_id": "-1", cpu + "cpu1/topology/package_cpus_list": "0-1",
			cpu + "cpu2/topology/physical_package_id": "-1", cpu + "cpu2/topology/package_cpus_list": "2-3",
			cpu + "cpu3/topology/physical_package_id": "-1", cpu + "cpu3/topology/package_cpus_list": "2-3",
		}), func(t *testing.T, topo *topology.Topology) {
			if len(topo.Packages) != 2 || topo.Packages[1].ID != -1 || topo.Packages[1].CPUs.String() != "2-3" {
				t.Errorf("Packages %v", topo.Packages)
			}
			if c, _ := topo.CPU(3); c.Package != 1 || c.PackageID != -1 || c.Core != 1 {
				t.Errorf("CPU(3) = %+v", c)
			}
		}},
		{"compute units split by core_id", with(noCgroup, treeEdits{
			cpu + "cpu1/topology/core_id": "7", cpu + "cpu3/topology/core_id": "9",
		}), func(t *testing.T, topo *topology.Topology) {
			if len(topo.Cores) != 4 || topo.Cores[1].ID != 7 || topo.Cores[1].CPUs.String() != "1" {
				t.Errorf("Cores %v, want one per CPU", topo.Cores)
			}
			if len(topo.Clusters) != 4 || len(topo.Dies) != 1 {
				t.Errorf("Clusters %d Dies %d; want one cluster per core, one die per package", len(topo.Clusters), len(topo.Dies))
			}
		}},
		{"NUL-padded files", with(noCgroup, treeEdits{
			cpu + "online": "0-3\n\x00\x00", node + "online": "0-1\n\x00",
		}), func(t *testing.T, topo *topology.Topology) {
			if topo.Online.String() != "0-3" || len(topo.Nodes) != 2 {
				t.Errorf("Online %s Nodes %d", topo.Online, len(topo.Nodes))
			}
		}},
		{"NVIDIA GPU memory node", with(noCgroup, treeEdits{
			node + "online": "0-1,255\n", node + "node255/cpulist": "\n",
			node + "node255/meminfo": "Node 255 MemTotal: 16384 kB\n",
			node + "node0/distance":  "10 20 80\n", node + "node1/distance": "20 10 80\n", node + "node255/distance": "80 80 10\n",
			"proc/driver/nvidia/gpus/0004:04:00.0/numa_status": "Node:   255\nStatus: online\n",
			"proc/driver/nvidia/gpus/0004:05:00.0/numa_status": "Node:   -1\n",
		}), func(t *testing.T, topo *topology.Topology) {
			n, ok := topo.Node(255)
			if !ok || n.GPUBusID != "0004:04:00.0" || !n.CPUs.IsEmpty() || n.MemoryBytes != 16<<20 {
				t.Errorf("Node(255) = %+v, %v", n, ok)
			}
			if topo.Distances.Between(1, 255) != 80 {
				t.Errorf("Distances %v", topo.Distances)
			}
			hasNote(t, topo, "NVIDIA GPU memory")
		}},
		{"hybrid by capacity", with(noCgroup, treeEdits{
			cpu + "cpu0/cpu_capacity": "1024", cpu + "cpu1/cpu_capacity": "1024",
			cpu + "cpu2/cpu_capacity": "512", cpu + "cpu3/cpu_capacity": "512",
		}), func(t *testing.T, topo *topology.Topology) {
			if len(topo.Kinds) != 2 || topo.Kinds[0].CPUs.String() != "2-3" || topo.Kinds[0].Capacity != 512 {
				t.Errorf("Kinds %+v", topo.Kinds)
			}
			if c, _ := topo.CPU(0); c.Kind != 1 || c.Capacity != 1024 {
				t.Errorf("CPU(0) = %+v", c)
			}
		}},
		{"turbo max 3.0 noise is not hybrid", with(noCgroup, treeEdits{
			cpu + "cpu0/cpufreq/cpuinfo_max_freq": "3700000", cpu + "cpu0/cpufreq/base_frequency": "2100000",
			cpu + "cpu1/cpufreq/cpuinfo_max_freq": "3900000", cpu + "cpu1/cpufreq/base_frequency": "2100000",
			cpu + "cpu2/cpufreq/cpuinfo_max_freq": "3700000", cpu + "cpu2/cpufreq/base_frequency": "2100000",
			cpu + "cpu3/cpufreq/cpuinfo_max_freq": "3800000", cpu + "cpu3/cpufreq/base_frequency": "2100000",
		}), func(t *testing.T, topo *topology.Topology) {
			if topo.Kinds != nil {
				t.Errorf("Kinds %+v, want none: max frequencies within 10%%", topo.Kinds)
			}
			if c, _ := topo.CPU(1); c.MaxFreqKHz != 3900000 || c.BaseFreqKHz != 2100000 || c.Kind != -1 {
				t.Errorf("CPU(1) = %+v", c)
			}
		}},
		{"hybrid by frequency", with(noCgroup, treeEdits{
			cpu + "cpu0/cpufreq/cpuinfo_max_freq": "2800000", cpu + "cpu0/cpufreq/base_frequency": "1400000",
			cpu + "cpu1/cpufreq/cpuinfo_max_freq": "2800000", cpu + "cpu1/cpufreq/base_frequency": "1400000",
			cpu + "cpu2/cpufreq/cpuinfo_max_freq": "3000000", cpu + "cpu2/cpufreq/base_frequency": "2000000",
			cpu + "cpu3/cpufreq/cpuinfo_max_freq": "3000000", cpu + "cpu3/cpufreq/base_frequency": "2000000",
		}), func(t *testing.T, topo *topology.Topology) {
			if len(topo.Kinds) != 2 || topo.Kinds[1].CPUs.String() != "2-3" || topo.Kinds[1].BaseFreqKHz != 2000000 {
				t.Errorf("Kinds %+v", topo.Kinds)
			}
		}},
		{"one CPU without frequency is not hybrid", with(noCgroup, treeEdits{
			cpu + "cpu0/cpufreq/cpuinfo_max_freq": "800000",
		}), func(t *testing.T, topo *topology.Topology) {
			if topo.Kinds != nil {
				t.Errorf("Kinds %+v, want none", topo.Kinds)
			}
		}},
		{"empty shared map means the core", with(noCgroup, treeEdits{
			cpu + "cpu0/cache/index1/shared_cpu_list": rm, cpu + "cpu0/cache/index1/shared_cpu_map": "00000000\n",
		}), func(t *testing.T, topo *topology.Topology) {
			var l2 []string
			for _, c := range topo.Caches {
				if c.Level == 2 {
					l2 = append(l2, c.CPUs.String())
				}
			}
			if !slices.Equal(l2, []string{"0-1", "2-3"}) {
				t.Errorf("L2 instances %v", l2)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			topo, err := topology.Discover(topology.WithRoot(tinyTree(t, tt.edits)))
			if err != nil {
				t.Fatalf("Discover: %v", err)
			}
			tt.check(t, topo)
		})
	}
}
