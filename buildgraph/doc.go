// Package buildgraph is the build-graph half of `numasteal run`: it reads a
// workload (a JSON build graph, a clang compilation database, or a file of
// shell commands, one per line), checks it, and decides which task may start
// next — without running anything itself.
//
// The pieces, one file each:
//
//   - task.go: the model, [Graph] and [Task], plus [Pos] (where a task was
//     written, so every later error can name the place).
//   - load.go and load_*.go: [LoadFile] and the three parsers. Bad input is an
//     [*Error] naming file:line:col and the task; nothing is half-loaded.
//   - validate.go: [Graph.Validate]: duplicate ids, unknown dependencies,
//     cycles (named in order, "cycle: a -> b -> c -> a"), undeclared pools.
//   - programs.go: [Graph.CheckPrograms], which finds a missing compiler
//     before anything runs.
//   - scheduler.go, priority.go, readyset.go, readyq.go, unmet.go: the
//     [Scheduler], which hands out
//     ready tasks in critical-path order (longest remaining chain first, as
//     ninja 1.12 does) while never exceeding the CPU-slot, memory and pool
//     limits, and which turns completions into one [Outcome] per task:
//     dependents of a failure are Skipped, and without keep-going the rest
//     are NotRun. Its cost per task does not grow with the graph: tasks are
//     numbered in scheduling order, the ready ones are a bitmap tree whose
//     first member goes next, and Progress reads counters.
//   - history.go, history_format.go: [History], the durations of earlier
//     runs that weight the critical path, bounded by [History.Retain].
//   - trace.go: [TraceWriter], a Chrome Trace Event writer (one track per
//     slot, as ninja's, spans named by output) whose output opens in
//     Perfetto.
//   - readfile.go, writefile.go: [ReadInput] reads only regular files of a
//     stated size (a named pipe never blocks, /dev/zero never fills
//     memory); [WriteFileAtomic] writes through a new O_EXCL|O_NOFOLLOW
//     temporary file renamed over the path, never through a planted link.
//   - history_key.go: the history's command hashes, keyed with a per-user
//     key so the file does not give commands away.
//   - bounds.go: the limits on task IDs and commands that Validate checks.
//   - shellwords.go: [SplitWords] and [QuoteWords], POSIX shell word rules
//     for compilation-database commands.
//
// The package executes nothing and imports no other numasteal package: the
// caller (the runtime's process executor) asks the Scheduler for a task,
// runs it wherever it likes, and reports back with [Scheduler.Done]. That
// keeps the scheduling rules testable with random graphs and random
// completion orders, far faster than real processes allow.
package buildgraph
