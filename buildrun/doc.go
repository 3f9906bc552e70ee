// Package buildrun executes build graphs on the numasteal runtime: it joins
// buildgraph's Scheduler, which decides what may start (dependencies,
// critical-path order, slot, memory and pool limits, keep-going), to a
// proc.Runner, which forks each command on the CPU the runtime's
// placement picks and reports how it ended.
//
// Run is the whole of it; `numasteal run` and examples/parallelbuild are
// its two users. It records durations into a buildgraph.History and spans
// into a buildgraph.TraceWriter when given them, and reports progress to a
// callback; printing is the caller's business.
package buildrun
