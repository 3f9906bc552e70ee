// Package guest holds the checks that run inside a numa-vm guest: its tests
// compare what the kernel, topology.Discover and the affinity package report
// with the vmtest.Layout the VM was booted with, and check where the daemon
// (package launch/daemon, run in the test process) and the launcher (the
// test binary started again) put a compile's CPU and pages, and build in a
// memory-limited cgroup v2 group on a layout that sets MemLimitMiB (package
// memory's v2 limit, the daemon's admission, the kernel's OOM kills). They
// skip unless $NUMASTEAL_IN_VM is 1; package vmtest's tests build them with
// CGO_ENABLED=0 go test -c and boot one VM per layout.
package guest
