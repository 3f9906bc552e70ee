// Package daemon is "numasteal serve": the per-user daemon that owns the
// machine's slots for every launcher (package launch), so that every build
// running on the machine at once draws on one pool.
//
// # Admission
//
// A job is admitted when a slot is free (slots default to the usable
// CPUs: the cgroup's cpuset and CPU quota, topology.EffectiveParallelism)
// and its memory fits the budget (default: MemAvailable, lowered to the
// cgroup's memory.max − memory.current, less a reserve of a tenth, at
// least 256 MiB). A job's memory is its output file's peak RSS the last
// time it was built, plus a tenth (the launcher measures it with wait4 and
// reports it; the store is a file of "KiB<TAB>path" lines beside the
// socket), or a first guess: 256 MiB for a compile, 1 GiB for a link (a
// link of a big program is the job that exhausts memory). A need above the
// whole budget is clamped to it: such a job runs alone, and never waits
// forever.
//
// A job the launcher says may go remote (a compile distcc can take, with
// distcc installed) that finds no local slot goes to the farm, when there
// is one and a host has a free slot ("Farm" below). Local slots come
// first: a remote job costs the transfer and the host's round trips.
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
// and freed when the process ends. The daemon hands off every job but
// those it wants measured: an output whose peak RSS it has not learned,
// and one in eight (remeasureEvery) of those it has, so that the store
// follows sources that change. A measured job's launcher forks the
// command, waits for it and reports its peak RSS. Handed-off jobs count
// as activity for the idle timeout, like connections.
//
// # Placement
//
// Each admitted job gets a CPU from the balance policy's placement
// (Balancer.Place with PlaceExec: the find_idlest walk over the scheduling
// domains), with the daemon's running jobs per CPU as the load. The
// launcher pins itself there before it forks the command.
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
