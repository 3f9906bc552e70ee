// Package vmtest checks numasteal against real Linux kernels booted with
// known NUMA layouts: its tests build the guest checks (package guest) into
// a static test binary and run it under numa-vm (shared/tools/numa-vm), once
// per Layout, passing the layout in the environment so the guest can
// compare what the kernel and numasteal report with what the VM was given.
//
// The package itself holds only the layouts and the arithmetic that turns a
// layout into what Linux should report; both sides use it.
package vmtest
