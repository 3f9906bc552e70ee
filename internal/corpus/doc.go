// Package corpus hands tests the real machines of the shared corpus
// (../shared/testdata/topologies: sysfs/procfs dumps from hwloc's test
// suite, each with hwloc's view of it in expected.json): the list of
// machines, each one's expected topology, and its archive extracted to a
// directory that topology.WithRoot can read.
//
// Extraction is cached on disk under $TMPDIR/numasteal-corpus, one
// directory per archive content hash, so that the test binaries of several
// packages (go test ./... runs them in parallel) and later runs share it.
// A directory appears there only complete: each archive is unpacked into a
// private directory that is then renamed into place. Remove the folder to
// reclaim the space (about 160 MB, mostly inode blocks of tiny files).
package corpus
