// Package memory keeps a build within the machine's memory: it reads what
// the machine and the process's cgroups allow and how hard memory is
// pressed (Source, Sample), what each running job holds (TreeRSS), and
// turns that into admission, freezing and thawing (Policy, Governor), so
// that jobs wait, or stop growing, instead of being OOM-killed.
//
// # What limits a build
//
// Every limit counts, and the tightest wins: the machine's MemAvailable
// (/proc/meminfo), and for the process's own cgroup and each ancestor,
// in whichever hierarchy holds the memory controller (the v1 "memory"
// hierarchy where a machine mounts one, which leaves none to v2; else the
// v2 unified hierarchy), memory.max and memory.high (v2) or
// memory.limit_in_bytes (v1). A limited group's headroom is its limit
// less its working set: usage (memory.current, memory.usage_in_bytes)
// less the inactive file pages (memory.stat inactive_file,
// total_inactive_file), which the kernel reclaims before it OOM-kills,
// the working set as the kubelet computes it. Sample.Available is the
// smallest headroom. Every sample reads the files again: other programs
// take memory too, and limits change. An owner whose tasks run in a
// memory cgroup of their own (supervise's tasks' memory, limited to
// TasksLimit: the tightest limit of the owner's cgroups less a margin
// for the owner) adds it with Source.WithTasks; its limit is then the
// tightest, and its OOM kills count with the owner's, while
// Sample.OwnLimit, and TasksLimit from it, keep to the owner's cgroups,
// so that the tasks' limit can follow theirs.
//
// # Pressure
//
// PSI (/proc/pressure/memory, or the process's own v2 cgroup's
// memory.pressure) says what share of time tasks stalled waiting for
// memory: "some" (at least one task) and "full" (every non-idle task).
// PSI's own averages span ten seconds at least, too slow for a compile
// that fills memory in two, so the Policy derives a recent share from the
// change of the cumulative totals between samples, averaged over about a
// second. Without swap, memory runs out before it stalls for long, and
// the available memory against the reserve is the signal that acts first;
// with swap, pressure is.
//
// # The policy
//
// The Policy makes a Plan of each sample and the running jobs (Job: its
// predicted peak Need, what it holds now, when it started, whether it is
// frozen). It holds admission back while the available memory is inside
// the reserve, while "some" pressure is at or above 10% (Buck2's default
// threshold), and while a job is frozen. Otherwise a new job fits when its
// need fits the room: the available memory less the reserve, less the
// growth still expected of the running jobs (their need less what they
// hold), and within the budget (--mem) less what all running jobs hold or
// are expected to. When no job runs, any job fits: a job larger than the
// room runs alone rather than never.
//
// When memory runs out all the same (available memory inside the reserve:
// a job's need was guessed low, or another program took memory) or "full"
// pressure reaches 20%, the Policy freezes the newest running job, one at
// a time and at most once per Settle unless less than half the reserve is
// left; the oldest job always runs, so the build moves on and frees
// memory. A frozen job thaws, oldest first, when its remaining expected
// growth fits again with no pressure, or at once when no other job runs.
// Freezing is Buck2's suspend strategy and earlyoom's wish ("stop
// memory-hungry compile jobs one at a time instead of killing them"); it
// stops growth and gives nothing back without swap, which is why the
// oldest keeps running. A frozen job is never killed by numasteal.
//
// # The governor
//
// A Governor runs the Policy for an owner (the daemon, a run): the owner
// asks Admit before it starts a job and calls Add and Remove around it;
// the Governor samples while jobs run: every 100 ms while admission holds
// or a job is frozen, every 25 ms while less than four reserves are left,
// and otherwise when the memory available beyond the reserve could be
// gone at the fastest rate memory is taken (6000 MiB/s, earlyoom's
// figure, which samples less often when much is free likewise), every
// 100 ms to 1 s. A run of short jobs samples once an interval, not once a
// job: the sample that admitted a job stands for its start. It reads each job's memory (its process
// tree's resident pages, or a cgroup's usage when the owner has one),
// freezes and thaws (SIGSTOP and SIGCONT to the tree, or the owner's
// cgroup freezer), and calls the owner back when more may be admitted. A
// frozen job that is sent a signal (Ctrl-C of its build) is continued so
// that the signal acts (a stopped process only keeps it pending), and is
// left to end, never frozen again. When the Governor stops it continues
// every job it froze.
//
// # OOM kills
//
// A job that the kernel OOM-kills dies of SIGKILL while the OOM-kill
// count rises: memory.events (v2) or memory.oom_control (v1) oom_kill of
// the process's cgroup, which counts the kills of its members (and, in
// v2, of the groups below it), or /proc/vmstat oom_kill, the machine's,
// when the process is in the root cgroup.
// Ended.OOMKills and OOMKilledSince tell such a death from a SIGKILL sent
// by someone, so that the owner runs the job again, alone if it must. A
// SIGKILL from elsewhere while an unrelated process is OOM-killed passes
// for an OOM kill; a job's rerun is safe only for jobs that rewrite their
// output (compiles, links), which is the owner's to know.
//
// The owners make their jobs the kernel's first choice: a job's process
// runs at an oom_score_adj of 500 (internal/oomscore; raising needs no
// privilege), which outweighs half the limit of the group that ran out,
// so the OOM killer takes a compile, which runs again, before the owner
// (numasteal run, the daemon) or make, whose death ends the build.
package memory
