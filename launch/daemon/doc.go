// Package daemon is "numasteal serve": the per-user daemon that owns the
// machine's slots for every launcher (package launch), so that every build
// running on the machine at once draws on one pool.
//
// # Admission
//
// A job is admitted when a slot is free (slots default to the usable
// CPUs: the cgroup's cpuset and CPU quota, topology.EffectiveParallelism)
// and its memory fits (package memory: a Governor over the daemon's own
// cgroups, which a daemon started by a build's first launcher shares with
// that build). Every limit counts: MemAvailable, memory.max and
// memory.high (cgroup v2) or memory.limit_in_bytes (v1) of the daemon's
// cgroup and each ancestor, and --mem; they are read again every 100 ms
// while jobs run, since other programs take memory too. A job fits when
// its need fits the room: what is available, less a reserve, less the
// growth still expected of the running jobs (their need less what their
// process trees hold now), within --mem. When no job runs, any job is
// admitted: it runs alone rather than never.
//
// # Jobserver
//
// "numasteal exec make ..." (package launch/buildexec) asks the daemon
// for a jobserver: a pipe whose tokens are the daemon's slots
// (jobserver.Elastic), which the make it becomes takes a token from
// before it forks a job. So make forks only the jobs a slot is free for,
// and a make -j of a thousand ready compiles has a handful of launchers
// alive, not a thousand waiting ones. The daemon lends free slots to the
// builds whose pipe is empty, takes idle tokens back for another build
// or a waiting launcher, and all of them while memory holds admission;
// a job of the build runs at once on a token no running job of the
// build stands on, subject to memory. Tokens a killed process held are
// counted back from what the build's process tree can still hold. The
// details are in jobserver.go.
//
// # Memory
//
// A job's need is its output file's peak the last time it was built, plus
// a tenth: the peak RSS the measuring launcher reports (wait4), or the
// most its process tree held at one of the daemon's samples, whichever is
// more (the store is a file of "KiB<TAB>path" lines beside the socket).
// An output never built takes the prior of its build and kind: the ninth
// decile of the peaks of the build's last 32 jobs of that kind that
// ended, raised to what a running one holds now; else a first guess,
// 256 MiB for a compile and 1 GiB for a link. So a first build learns
// from its own first jobs and does not start several large compiles
// together on a guess.
//
// When memory runs out all the same (a need guessed low, another program
// taking memory), the Governor freezes the newest running job (SIGSTOP to
// its process tree) and thaws it, oldest first, when its remaining growth
// fits again or no other job runs; while a job is frozen or pressure is
// high nothing new is admitted. The oldest job always runs. A frozen job
// is never killed by numasteal; one that is sent a signal while frozen
// (Ctrl-C of its build) is continued so that the signal acts.
//
// # OOM kills
//
// The launcher stays the parent of the command (measured, not handed
// off) unless the job's peak is known and it fits twice over in the room
// left, so that a job the kernel kills can run again. A measured command
// that dies of SIGKILL is reported with "signal=9" (and "interrupted=1"
// when the launcher passed on a signal of its own: the user's). The
// daemon compares the OOM-kill counters (/proc/vmstat oom_kill, the
// cgroup's memory.events or memory.oom_control) with their value when the
// job started: an OOM kill of a compile or a link that ran beside other
// jobs, or below nine tenths of the memory available as it started, runs
// again, at most twice, at the head of its build's queue with a need of
// 5/4 of its peak (so it may run alone); when nothing else of the daemon
// runs, it waits, up to 30 s, until what it held when it was killed is
// free again beyond the reserve (another program's memory coming back),
// then runs alone. The daemon answers with the new grant and the
// launcher runs the command again, make seeing one success. A job
// killed near all the memory it had alone fails once, the daemon's
// "error code=oom" message (its peak and the limit) on the launcher's
// stderr. A command the user killed, or a SIGKILL with no OOM kill
// counted, is never run again. Handed-off jobs cannot be run again
// (nothing of the launcher is left); they are the ones whose memory is
// known and plentiful.
//
// The commands are the kernel's first victims (their launchers raised
// their oom_score_adj, and put their own back once a measured command
// started), but they share make's cgroup with make, the launchers and,
// when a launcher of that build started it, the daemon: when a killed
// command cannot be reaped at once and no other command is left to take,
// a second OOM kill in the group takes the largest process left, the
// daemon. Its launchers then run their commands without it (admitted by
// nothing). numasteal run keeps itself out of this with a memory cgroup
// of its tasks' own (package supervise); the launchers' commands are
// make's children, in make's cgroup, below which cgroup v2 enables no
// controller (it holds processes), and no such cgroup is made in v1
// either.
//
// # Fairness
//
// Waiting jobs queue per build (launch.BuildID), first come first served
// within a build; free slots go to the heads of the builds' queues in
// turn, round robin, so a small build waits for at most one job of each
// other build per slot, never for a large build's whole queue. A head that
// does not fit in memory stops admission: no job, of its build or another,
// passes it, so a large link is never starved by a stream of small
// compiles. The cost is slots left idle while memory drains; backfilling
// (admitting small jobs that finish before the big one could start) needs
// duration estimates, which buildgraph.History could give; not done.
//
// Remote jobs take farm slots in the same round robin, the first remote
// job of each build's queue in turn; they may pass a head that waits for
// a local slot or for memory, since they take neither. A job run again
// here after its farm run failed goes to the head of its build's queue:
// it waited its turn already.
//
// A build whose build tool process has ended (make killed, or dead of
// SIGPIPE under "make | head") loses its waiting jobs: the daemon watches
// that process with a pidfd and answers each waiting launcher "error
// code=gone", and the launcher exits without running its command
// (buildwatch.go).
//
// # Farm
//
// With a farm (Config.Farm: "numasteal serve --farm HOSTS", or
// $DISTCC_HOSTS in the daemon's environment without --farm, and none with
// --farm none; its hosts are probed at start, and those that do not
// answer start down), a remote job's grant
// names a host (farm.Farm.Acquire: icecream-style scoring by measured
// speed, load and recent faults) instead of a CPU, and is never handed
// off: the launcher runs the compile through distcc on that host alone,
// waits, and reports its status, wall time and whether distcc itself
// failed (its own exit codes, 100 to 127, or a crash). The daemon releases the lease
// with that outcome: a success measures the host's speed (the object's
// size over the wall time), a distcc failure takes the host down for its
// back-off, and a compile error counts against nobody. After a distcc
// failure the launcher asks again for a local slot and runs the compile
// here, once; the failed attempt is not counted as a job done. When a
// host's back-off ends while remote jobs wait, a timer admits again, so
// they use it even while long jobs keep the local slots. A remote
// job's peak RSS (distcc's) is not learned. A launcher gone without a
// report gives its lease back unused.
//
// # Handoff
//
// A job's slot belongs to its connection until the launcher execs the
// command in its own place; from then on it belongs to the process,
// watched through a pidfd (pidfd_open, from the peer's SO_PEERCRED pid,
// opened while the launcher waits for its grant and so cannot have ended),
// and freed when the process ends; the connection's goroutine, its
// requests served, waits on the pidfd. The daemon hands off every job but
// those it wants measured: an output whose peak RSS it has not learned,
// and a sample of those it has, so that the store follows sources that
// change: one in 8, and one in up to 128 while re-measures agree with the
// store within a tenth (remeasure.go). A measured job's launcher forks the
// command, waits for it and reports its peak RSS. Handed-off jobs count
// as activity for the idle timeout, like connections.
//
// # Connections
//
// The accept loop answers a launcher's first request itself when it can:
// woken on the listening socket by the runtime poller, it accepts, reads
// what has arrived (waiting at most a millisecond for the request a
// launcher writes right after its connect, never blocking), and when the
// request is an acquire granted at once it replies before anything else
// is woken, so that a grant costs the launcher one wake-up of the daemon.
// Everything else is served by the connection's goroutine.
//
// One goroutine serves a connection and reads it itself, through a
// 512-byte buffer that a longer line outgrows only for that line; a
// connection waiting for its grant is blocked in that read, which sees
// the launcher go (a killed launcher's slot or place in the queue comes
// back at once), and the admission wakes it with a read deadline in the
// past. With ninja -j 1000 or make -j, most connections wait: each costs
// its goroutine's stack, its socket and its job, about 14 KB
// (docs/BENCHMARKS.md, "Daemon memory per waiting connection").
//
// # Placement
//
// Each admitted job gets a CPU from the balance policy's placement
// (Balancer.Place with PlaceExec: the find_idlest walk over the scheduling
// domains), with the daemon's running jobs per CPU as the load. On a
// machine of several nodes the launcher pins itself there before it
// execs or forks the command; on a machine of one node the CPU only
// counts the slot, and the kernel places the command (package launch,
// "The launch path", step 5).
//
// On a machine of several NUMA nodes, the job's memory need must also fit
// its node's room: the node's free memory (memory.NodeMemory.Free: no
// page cache, which the allocator does not reclaim before it takes a
// remote node's page) less what the jobs running there are still expected
// to take (each one's need less what its processes hold). When it does
// not, the job goes to the idlest CPU of a node whose room covers it (the
// least loaded such CPU, then the most room), or of the node with the
// most room when none does. The grant names the node, and the launcher
// sets the command's memory policy to prefer it (MPOL_PREFERRED): its
// pages come from there while the node has free pages, so a large job
// neither spills to a remote node nor fills the node of the small ones.
package daemon
