// Package supervise starts the processes of a run so that every one of
// them, and every descendant of each, is known and ends with its task, on
// every path — done, failed, timed out, interrupted, and the death (even by
// SIGKILL) of the supervising process — and none is left a zombie.
//
// # The problem
//
// A task is a command, and a command is a tree of processes that changes
// while it runs: a compiler driver forks cc1 and as, a test script puts a
// server in the background, a daemon calls setsid(2) to leave its session,
// a shell with `set -m` gives each background job a process group of its
// own. Waiting for the command's pid (exec.Cmd.Wait) says when the root of
// that tree exited, nothing about the rest. What is left runs on after the
// task has "ended": it holds CPUs the scheduler believes free, holds the
// task's output pipes open (so Wait blocks until WaitDelay), holds files,
// and is reparented to init (or to us) to become a zombie when it exits.
// Killing the root alone (exec.CommandContext's default Cancel) leaves the
// same tree behind.
//
// So each task has to be a set of processes that the Supervisor can name
// at any moment, signal as a whole, see empty, and whose members it reaps
// when they are reparented to it; and the set must die also when the
// Supervisor cannot act, because it was SIGKILLed.
//
// # The paths
//
//   - done or failed: the main child exits (any status). Whatever it left
//     is ended as below before the task is done; the main child's status
//     is the task's.
//   - timed out, canceled, interrupted once: Start's ctx is done (a
//     deadline, the CLI's first SIGINT). The task is ended gracefully:
//     SIGTERM, Options.Grace, SIGKILL. Task.Terminate does the same.
//   - interrupted twice: Task.Kill or Supervisor.KillAll. SIGKILL at once,
//     cutting short a grace already running.
//   - stopped and continued: Supervisor.StopTasks and ContinueTasks for
//     the CLI's SIGTSTP and SIGCONT (the terminal stops only its foreground
//     process group, and every task has a group of its own); Task.Stop for
//     one task (a run's memory governor freezing it).
//   - the Supervisor closes: Close terminates what still runs.
//   - the supervising process dies: a panic, os.Exit, an OOM kill, SIGKILL.
//     Nothing in this process runs any more; see "Parent death".
//
// # The mechanisms
//
// Process group. Every task's main child starts with Setpgid (or Setsid,
// if the caller asked), so pgid = pid, and kill(-pgid) reaches the main
// child and all it forked that did not change group. Until the main child
// is reaped its pid, and so the group's id, cannot be reused: the monitor
// waits for its exit through a pidfd (pidfd_open, PIDFD_NONBLOCK) in Go's
// poller, where it parks like a goroutine reading a socket (a read
// deadline interrupts it for ctx, Terminate and Kill), or, for a task
// started by StartHere, in poll(2) on its own locked thread, the pidfd
// beside an eventfd that interrupts it (where pidfds do not work, a
// goroutine blocks in waitid); it peeks at it with waitid(WNOWAIT), ends
// the rest, and only then lets exec.Cmd.Wait reap it. This is ninja's kill(-pid) and the runtime's
// existing process runner. It misses setsid and `set -m` children.
//
// The marker. Every task's environment gets NUMASTEAL_SUPERVISOR=RUN.N
// (MarkerEnv, Task.ID), and children inherit environments, so every
// descendant is found by scanning /proc/*/environ, escapees included. The
// limits: a process that clears its environment (env -i, a sanitizing
// sudo) loses it; a process of another user cannot be read unless we are
// root (or have CAP_SYS_PTRACE); /proc/PID/environ shows the environment
// as it was at exec, so a process that only unsets the variable in its own
// memory keeps it; and a scan reads two files of every process on the
// machine, about 5 µs each on the machine measured (BenchmarkSweep: 0.44 ms
// for 80 processes), so it is a poll, not a hot path. Each signal to a
// scanned pid goes through a pidfd opened before the marker is checked
// again, so a recycled pid is never hit.
//
// Cgroup. Where cgroup v2 is mounted and this process may create cgroups
// below its own and move processes into them (root, or a delegated
// subtree), the run gets a cgroup numasteal-RUN below this process's, and
// each task a cgroup N below that; the main child is cloned straight into
// it (SysProcAttr.UseCgroupFD, clone3 CLONE_INTO_CGROUP), so there is no
// moment in which it, or a child of it, is outside. A task cgroup that is
// empty and thawed when its task ends serves the next task, its
// directory and cgroup.events held open: no mkdir, rmdir or open per
// task. This holds only where the run's cgroup enables no controller
// below it (a memory controller's cgroup keeps the page cache a task
// touched charged after it ends), and not for a cgroup that had
// cgroup.kill written (Linux 6.18 kills a child cloned into it later).
// Nothing unprivileged
// leaves a cgroup, env -i and setsid included, so with a cgroup the
// marker scan is skipped while a task ends: "populated 0" in cgroup.events
// says the task is empty, cgroup.kill (Linux 5.14) SIGKILLs every member
// at once, and cgroup.freeze stops them all, atomically and invisibly to
// them (frozen processes show state S, not T). This is systemd's
// KillMode=control-group. Only a privileged process that writes a member's
// pid into some other cgroup takes it out of the task.
//
// The tasks' memory. With Options.TaskMemoryLimit the tasks run in a
// memory cgroup that holds them and nothing else, limited to that many
// bytes as the run starts, and to what SetTaskMemoryLimit sets later:
// normally the limit of this process's own memory cgroups less a margin
// for this process (memory.TasksLimit), which a build run follows while
// that limit changes (package buildrun). When the tasks outgrow it
// the kernel's OOM killer chooses among them alone: never this process,
// however its victim is chosen, a second kill for a victim the kernel
// could not reap at once included (oom_score_adj only ranks processes,
// and once no task is left to take, the largest process left is the
// supervisor). In the v1 memory hierarchy, which a hybrid machine gives
// the controller, it is a cgroup numasteal-RUN below this process's own.
// v1 cannot clone into a cgroup, but its membership is per thread and a
// child is born in its forking thread's cgroup: each kept fork thread
// enters the cgroup for good as it starts (its tasks file), and StartHere
// moves the caller's locked thread in for the fork and out again (two
// writes, 6.7–9.2 µs together on the machine measured:
// BenchmarkThreadMove; a fork and exec takes hundreds of µs). Neither is
// ever the main thread, whose cgroup is the one the whole process's
// memory is charged to (the mm's owner): StartHere called there hands the
// fork to a kept thread;
// the runtime starts no thread from a locked one (it asks its template
// thread), so no other thread of this process enters. A child whose
// forking thread could not enter is moved in right after its fork
// (cgroup.procs), beside its OOM score. In v2 it is the run's
// cgroup, its tasks cloned into it, with the memory controller enabled in
// its parent. v2 enables no controller below a cgroup that holds
// processes: the parent is a CgroupParent without members (a delegated
// subtree), or this process's own cgroup when this process is its only
// member (a unit or container of its own, a test's cgroup), which it
// then leaves for a leaf numasteal-RUN-self below it, and the watchdog,
// started after, is there too. Close, and the watchdog when this process
// dies, remove the tasks' cgroup, disable the controller again, move back
// and remove the leaf.
//
// The reaper. With Options.Subreaper, this process is a child subreaper
// (PR_SET_CHILD_SUBREAPER, tini -s): an orphan anywhere below it is
// reparented here instead of to init, and when it exits it is a zombie
// here. tini reaps with waitpid(-1, WNOHANG), which in a Go program would
// also reap a main child whose exec.Cmd.Wait is pending and make that Wait
// fail with ECHILD. So a reaper pass (every 50 ms, reapInterval, and
// after each task) peeks with waitid(P_ALL, WNOHANG|WNOWAIT), which shows an
// exited child without reaping it, and reaps by pid only children that no
// exec.Cmd of the Supervisor owns; when the peek shows an owned zombie
// (which would hide the others) the pass ends, and the pass that owned
// zombie's monitor makes once it has reaped it sees past it. Starts
// register their child under a lock the pass takes exclusively, so a pass
// never sees an unregistered child of ours; a task's pass that finds
// starts holding that lock (a fork and exec takes hundreds of
// microseconds) is made by the last of them as it lets go, before that
// start returns, so no monitor waits for another task's fork. The reaper does not listen for
// SIGCHLD: every main child's exit would wake Go's signal goroutine and
// the reaper's, two wake-ups per task for a pass the task's monitor makes
// anyway, while an orphan's zombie (a pid and a task struct) may as well
// wait up to 50 ms. A pass that finds nothing costs one system call
// (BenchmarkReapPass: 0.4 µs). The catch: any child of this process that a
// Supervisor did not start is reaped too, so a program that sets Subreaper
// must start all its children through Supervisors (as `numasteal run`
// does); and a process that is already a subreaper gets the reaper either
// way, since its orphans come here regardless.
//
// # Ending a task
//
// Once the main child has exited, or ctx is done, or Terminate or Kill is
// called, the task's monitor sweeps it: signal the process group, the
// cgroup (each member, or cgroup.kill for SIGKILL) and, without a cgroup,
// every marked process or group member the /proc scan finds; and count
// what is alive. A task whose main child exited and whose cgroup is
// unpopulated costs one pread of cgroup.events. Without a cgroup, with
// Subreaper, every live descendant of a task whose main child has exited
// lies below an orphan reparented here (the topmost live one lost its
// parent), and the orphans are the children of this process's main
// thread that no task's exec.Cmd owns: when none of them is in the
// task's process group or carries its marker, nothing of the task is
// alive, and the task costs one read of /proc/self/task/PID/children and
// two files of each orphan instead of a scan of the machine: a task of
// /bin/true then costs what it costs with a cgroup (BenchmarkTask:
// 0.57–0.69 ms without, 0.52–0.67 ms with, on the machine measured),
// where a sweep's scan adds about 0.6 ms. Without either, one sweep.
// Otherwise, when
// graceful, SIGTERM and SIGCONT (a stopped process acts on the TERM only
// once continued) go out, and sweeps with a backoff of 1 to 50 ms count
// until nothing is left, Grace passes, or Kill is called. Then rounds of
// SIGKILL and counting, each up to a second, re-signal what a fork slipped
// past the previous round, for at most 30 rounds (a process in D state is
// the kernel's; the monitor logs it and waits for the main child). Then
// exec.Cmd.Wait reaps the main child, a reaper pass reaps what was
// reparented here, the task's cgroup is kept for the next task or
// removed, and Done closes. The monitor is a goroutine of the task's, or,
// for StartUnmonitored and StartHere, the caller's own (Task.Monitor).
//
// # Parent death
//
// Pdeathsig. SysProcAttr.Pdeathsig is sent to the child when the thread
// that forked it exits, not the process, and Go decides when its threads
// end (a goroutine that exits while locked to its thread ends it): a child
// forked from an ordinary goroutine gets the signal mid-run whenever the
// runtime happens to end that thread. So every task is forked from a
// thread that outlives its child: one of a few goroutines
// (Options.ForkThreads, default one) that lock their OS thread for the
// Supervisor's lifetime and never unlock it, or, with StartHere, the
// caller's own thread, locked from the fork until the child is reaped
// (Task.Monitor returns). Pdeathsig = SIGKILL is then safe, and covers the
// direct children on any death of this process.
//
// Handing the fork to a kept thread costs a channel round trip, within
// the noise of a fork and exec (BenchmarkStartKeptThread against
// BenchmarkStartPlain: about 0.6 ms each for /bin/true on the machine
// measured), but it wakes the kept thread and parks it again for every
// fork. The kept thread is ours alone, so StartPlaced narrows its CPU
// mask (and memory policy) to the placement for the fork and puts it back
// after, where affinity.StartPlaced has to borrow a fresh runtime thread
// and, for a memory policy, let it die; the child inherits both from its
// first instruction either way. Narrowing a running thread's mask to
// another CPU migrates it, so a start placed on a single CPU goes to a
// kept thread pinned to that CPU for the Supervisor's life instead (made
// at the first such start): no sched_setaffinity per task.
//
// StartHere wakes no other thread: the caller's thread forks, then sleeps
// in poll(2) on the child's pidfd, and the child's exit wakes it, as
// make's waitpid does (Go leaves the P of a thread in a system call alone
// while another P is idle). It narrows its own thread's mask for a placed
// fork and keeps it narrowed while it waits (a sleeping thread's mask
// costs nothing), so that the child's exit wakes it on the CPU the child
// leaves free rather than on one another command runs on; the reap, and
// whatever its goroutine starts next, run there. The mask is restored when
// Task.Monitor returns (a sched_setaffinity each, and a migration when the
// CPU is another). It takes a memory policy to a kept thread. A goroutine
// that waits for its child anyway (a process task's) pays for the lock
// only if it blocks in Go's scheduler before the reap: its thread then
// parks and hands its P on.
//
// The watchdog. Pdeathsig does not reach grandchildren, nor remove temp
// files, cgroup directories, or give back jobserver tokens. With
// Options.Watchdog (normally os.Executable()), New re-executes that binary
// as a watchdog: main calls MaybeWatchdog first, which sees
// NUMASTEAL_WATCHDOG and runs RunWatchdog instead of the program. It is in
// a process group of its own, ignores the terminal's signals, is in no
// task's cgroup, carries no marker and no Pdeathsig, and holds the read end
// of a CLOEXEC pipe whose write end only the Supervisor holds (no task
// inherits it). Over the pipe (protocol.go) the Supervisor tells it the
// run's marker and cgroup, the temp paths to remove (TempPath), and how
// many jobserver tokens it holds (SetTokens; the watchdog inherits
// Options.WatchdogTokens). Close says "bye" and the watchdog exits at
// once. End of file without bye means the Supervisor is dead: the watchdog
// SIGKILLs every process carrying the run's marker and the run's cgroup
// (cgroup.kill), until none is left, then writes the tokens back, removes
// the temp paths and the cgroup directories, and exits. The test measures
// about 10 ms from the supervisor's SIGKILL to the last task process gone.
// A library user who does not opt in has no watchdog and no second process.
//
// # Which mechanism covers which path
//
//	path                    ends the main child   ends the rest               reaps
//	done / failed           (exited)              group + cgroup or marker    Cmd.Wait, reaper
//	timeout / cancel / INT  group TERM→KILL       group + cgroup or marker    Cmd.Wait, reaper
//	second INT (Kill)       group KILL            cgroup.kill or marker KILL  Cmd.Wait, reaper
//	stop / continue         cgroup.freeze, else SIGSTOP/SIGCONT to group and marker
//	supervisor dies         Pdeathsig             watchdog: marker + cgroup   init (or the next subreaper)
//	                                              (+ tasks' v1 memcg)
//
// # What a machine without cgroup v2 delegation gets
//
// Everything but the cgroup: groups and markers end the tasks, and the
// /proc scan runs on each poll while a task ends (cost above), unless,
// with Subreaper, no orphan of the task is alive at its end; a process
// that both leaves its group (setsid, set -m) and clears its environment
// (env -i) escapes, and so does another user's process when we are not
// root. StopTasks sends SIGSTOP, so a process forked between the scan and
// the signal runs on until the next call, and processes show state T.
// Mechanisms (and the "supervise: mechanisms" log line) say which is in
// use and why the cgroup is not; Options.NoCgroup forces this mode, and
// the tests run every path in both.
//
// # Rejected designs
//
//   - waitpid(-1) reaping (tini): steals exit statuses from exec.Cmd.Wait.
//   - Pdeathsig from whatever thread cmd.Start runs on: fires when that
//     thread exits, which Go decides; and locking the thread only around
//     the fork (affinity.StartPlaced) ends it, or returns it to the pool,
//     right after.
//   - A prctl(PR_SET_PDEATHSIG) in every descendant: only the direct child
//     is ours to set up; grandchildren are other people's programs.
//   - Killing by the pid list of a process tree walked once: forks race the
//     walk, and setsid orphans have left the tree by the time it is walked;
//     the marker, inherited at fork, has no such window.
//   - Moving the child into its cgroup after Start (writing cgroup.procs):
//     it runs, and may fork, outside for a moment. CLONE_INTO_CGROUP has no
//     such moment, and the kernels with cgroup.kill all have it.
//   - A cgroup v1 freezer or pids controller: a hybrid machine's v1
//     hierarchies are not delegated, and v1 has no cgroup.kill.
//   - The watchdog as a goroutine or a forked (not exec'd) copy: nothing of
//     this process survives a SIGKILL, and Go cannot fork without exec.
//   - The watchdog noticing death by polling getppid: a pipe's EOF is
//     immediate and cannot be faked by a recycled pid.
package supervise
