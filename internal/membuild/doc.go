// Package membuild makes builds that memory limits: a memory-limited
// cgroup (cgroup v2 where the machine delegates the memory controller,
// else the v1 memory hierarchy), the compiler memhog that really
// allocates what its source says, and a make project of its compiles.
// The memory tests (through internal/memtest) and "numasteal bench
// memory" build in them; a build in a Group never reaches the
// machine-wide OOM killer: the limit is its own group's.
package membuild
