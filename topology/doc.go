// Package topology is a read-only model of the machine a scheduler runs on,
// read from Linux's sysfs and procfs. Package topology/domains builds the
// scheduling domains from it; this package does not know about them.
//
// Discover reads the live machine, or with WithRoot a dump of another one
// (the way hwloc's HWLOC_FSROOT does): packages, dies, clusters, cores and
// hardware threads; caches with the CPUs sharing each; NUMA nodes with
// their memory and distance table; CPU kinds on hybrid parts; and what the
// process may use, the online CPUs allowed by its affinity mask and cgroup
// cpuset (Usable), with the cgroup's CPU quota. The result is never changed
// after Discover returns and may be shared by any number of goroutines.
//
// Discovery follows the kernel's own files and copes with what real
// machines write there: old kernels without cpu/online, node/, *_list files
// or die/cluster masks, offline CPUs, CPU-less and memory-less nodes,
// sparse node ids, physical_package_id -1, BIOS tables that put every CPU
// in every node, CPUs in no node, NVIDIA GPU memory nodes. Where hwloc
// makes a choice in such cases we make the same one unless a field's
// documentation says otherwise; Topology.Notes records each oddity met. A
// file that exists but holds something the kernel never writes is an
// error, a *FileError naming the file and the text.
//
// The shared corpus of 21 real dumps (internal/corpus) checks all of this
// against hwloc's reading of the same files.
package topology
