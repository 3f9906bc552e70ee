// Package launch is the compiler launcher: the small program a build
// system runs in front of every compile and link ("make CC='numasteal-launch
// gcc'", CMake's CMAKE_<LANG>_COMPILER_LAUNCHER, a masquerade directory,
// ccache's CCACHE_PREFIX), which asks the per-user daemon (package
// launch/daemon) for a slot, on a machine of several NUMA nodes pins
// itself to the CPU it is given, and becomes the command (exec) or, when the daemon wants the command's peak
// memory measured, runs it and reports it back. This is the shape
// of ccache, distcc and sccache (a thin client, a local server) with the
// server owning admission instead of a cache.
//
// # The launch path
//
//  1. Find the program: a name with '/' as is; else the first executable of
//     that name in PATH that is not this binary (compared by device and
//     inode, so a masquerade link to the launcher is skipped, as ccache
//     and distcc's climasq skip their own directory).
//  2. Nested launches run at once: a command launched gets NUMASTEAL_SLOT
//     in its environment, and a launcher that sees it (gcc running a
//     masqueraded ld, a recipe running make) execs its command in the slot
//     already held. Asking for a second slot while holding one could
//     deadlock a full pool. NUMASTEAL_LAUNCH=off does the same.
//  3. Connect and send "acquire" (kind, output file; the build when
//     $NUMASTEAL_BUILD names it, else the parent's pid, from which the
//     daemon names it; remote when the command may run on a
//     compile farm host: a compile distcc's hosts can take, by
//     farm/compile.Parse, with distcc in PATH); the reply "grant" comes
//     when the daemon admits the job. The request needs only the command
//     line, so it goes first, and the launcher reads its inherited signals,
//     searches PATH (step 1) and reads the machine's online nodes while a
//     running daemon decides; with no daemon running, it starts one only
//     once the program is found. Until the grant the slot belongs to the
//     connection: a launcher killed while waiting (SIGKILL included) gives
//     it back with no message. A waiting launcher blocks in a read of the
//     socket, a system call of its one goroutine, with the runtime's
//     poller never started: its threads are the runtime's
//     (docs/BENCHMARKS.md has its memory).
//  4. Remote, when the grant names a farm host instead of a CPU (the
//     daemon has a farm and no local slot was free): run "distcc COMPILER
//     ARGS..." with DISTCC_HOSTS naming that host alone (and, from the
//     daemon, --localslots_cpp at its slot count, so the preprocessors
//     distcc runs here stay within the CPUs) and distcc's fallback and
//     local retry off, wait for it, send "done" with its
//     status, wall time and whether distcc itself failed (its exit codes
//     100 to 127, not the compiler's, or a crash), and exit with its
//     status. A
//     compile error is the compiler's status, passed through once. After
//     a distcc failure nothing has run: acquire again, on a new
//     connection, with "local" (the daemon gives a local slot, at the
//     head of the build's queue), and go on from step 5 with the local
//     grant, exactly once.
//  5. On a machine of several nodes, pin the launcher's thread to the
//     granted CPU (the command inherits the mask) and set its memory
//     policy to prefer the granted node (MPOL_PREFERRED, kept across fork
//     and exec), so the command runs and its pages come from there. On a
//     machine of one node the granted CPU is the daemon's count of its
//     slots, and the command runs where the kernel puts it: pinned, it
//     could not leave a CPU that work outside the daemon keeps busy, nor
//     start the compiler driver's children on another CPU. The launcher
//     has raised its oom_score_adj to 500 while the daemon decided
//     (internal/oomscore; kept across fork and exec, never below what the
//     launcher inherited): when memory runs out, the kernel's OOM killer
//     takes the command, which runs again, before make or the daemon,
//     whose death ends the build or every build. A launcher that forks
//     the command puts its own value back once the command has started
//     (oomAdj), so that when the killed command cannot be reaped at once
//     the kernel's next choice is not the launcher that would run it
//     again; a launcher waiting meanwhile is small, and goes after every
//     larger command.
//  6. Handoff, the usual case: when the grant says "handoff", exec the
//     command in the launcher's place; the grant itself was the handoff
//     ("atgrant", below), so the daemon has closed its end and has nothing
//     to do while the command starts. The command is then
//     the very process make started: its pid, descriptors 0, 1 and 2 and
//     every other inherited one (make's jobserver), its process group, its
//     signals and its exit status are make's own, with nothing forwarded.
//     The slot now belongs to the process: the daemon watches its pidfd and
//     frees the slot when it ends, however it ends.
//  7. Measured, when the daemon wants the command's peak RSS (an output it
//     has not seen, one in 8 to 128 of those it has, or every one when
//     $NUMASTEAL_MEASURE is 1) or memory is tight: fork the command from
//     the pinned thread with the same descriptors and process group, wait
//     with wait4, whose ru_maxrss covers the command and every child it
//     waited for (cc1, as, collect2), send "done" with it (no answer is
//     awaited), and exit with the command's status; a command killed by
//     SIGINT, SIGTERM, SIGHUP, SIGPIPE or SIGKILL kills the launcher with
//     the same signal, so make sees what it would have seen of the
//     compiler. The slot belongs to the connection, which ends with the
//     launcher. A command killed by SIGKILL is reported with "signal=9"
//     and the launcher waits for the answer: a new grant when the kernel
//     OOM-killed it and it runs again (run it again, from step 5), else
//     "ok", or "error code=oom" with a message for stderr; then the
//     launcher dies of SIGKILL as the command did (package launch/daemon,
//     "OOM kills").
//
// # Cost
//
// A launch costs one Go process start (the launcher is a separate small
// static binary, numasteal-launch, whose packages do no work at init), one
// connect and one round trip, with the PATH search and the reading of the
// inherited signals (the end of the symbol table, file pages shared by
// every launcher) done during the round trip, and an exec. Handing off
// instead of waiting saves a second process, a signal-forwarding thread,
// the report's round trip and the launcher's exit; the build's ancestry,
// which names the build, is read by the daemon, which caches it per parent
// (Builds), not by every launcher. docs/BENCHMARKS.md has the numbers,
// beside an exec-only Go program and an exec-only C program.
//
// # Signals the launcher inherited
//
// The command gets the signal dispositions and mask the launcher was
// started with, in every path (handoff, measured, run directly): a build
// run with SIGINT and SIGQUIT ignored (a script's background job, nohup's
// SIGHUP) has compilers that ignore them too. Go's runtime handles almost
// every signal and unblocks some, which exec and fork would pass on as
// defaults; the launcher reads what the runtime found at start
// (signals_linux.go) and ignores those signals again itself (so it never
// un-ignores one to forward it), sets them ignored before an exec, and
// forks and execs from a thread with the inherited mask. Only SIGCHLD
// ignored is not passed to a measured command (the launcher must wait
// for it). A stripped launcher (no symbol table) knows only an ignored
// SIGHUP and SIGINT and the signals the runtime leaves alone.
//
// # Pdeathsig
//
// A measured command is forked with Pdeathsig = SIGKILL, so it dies with
// the launcher. The kernel sends it when the forking *thread* exits, so Run
// locks the main goroutine to its thread once the slot is granted (not
// before: a thread locked while the launcher waits would make the runtime
// start its template thread for nothing) and never unlocks it: that thread
// lives as long as the process (see package supervise, "Parent death").
// A command handed off is exec'd without a lock on a machine of one node
// when the inherited signal mask is empty: there is no thread state to
// keep (no pin, no memory policy, no mask), and the lock's template
// thread would cost every launch a clone(2).
// Grandchildren (cc1) are not covered; they end when their driver is gone
// and their pipes break.
//
// # Never breaking a build
//
// When no daemon answers and none can be started, or it speaks another
// protocol version, or it refuses the request, the launcher execs the
// command directly and warns once per build (a marker file named by the
// build id in the runtime directory, created O_EXCL), on stderr; under
// ccache or sccache, which store a compile's stderr and replay it on every
// cache hit, on the terminal and in the daemon's log instead. A connection that
// breaks before the grant (the daemon was killed, or exited idle just as
// we connected) is retried on a new connection, starting a new daemon:
// nothing has run yet, so nothing runs twice. A connection that breaks
// after the grant changes nothing: the command runs to its end, once, and
// only its measurement is lost. A farm host that fails (distcc exits with
// one of its own codes: the host refused, timed out, or lacks the
// compiler) costs a compile only its remote attempt: it runs here, once.
//
// # Startup
//
// The daemon's directory is $XDG_RUNTIME_DIR/numasteal, else
// $TMPDIR/numasteal-UID, created 0700 and refused when it is a link, not
// ours, or open to others; $NUMASTEAL_SOCKET overrides the socket path.
// A $XDG_RUNTIME_DIR that is missing (it is never created), not a
// directory, not ours, not writable or unable to hold numasteal's
// directory is passed over for $TMPDIR/numasteal-UID, with one warning
// per build naming it. Nothing is created in a refused directory: the
// per-build warning markers then go to $TMPDIR/numasteal-UID.
// A launcher that cannot connect takes the start lock (flock, blocking),
// connects again (whoever held the lock may have started one), and only
// then starts "numasteal serve" detached (its own session, stdin
// /dev/null, output to the log, none of the launcher's other descriptors)
// and polls the socket for up to 30 s. The daemon holds the daemon lock
// (another file) for its whole life and only then removes any socket file
// and binds: with the lock, a socket file can only be a dead daemon's, so
// a stale socket is replaced and two daemons never both listen. Exactly
// one wins however many start: the start lock makes one launcher start
// it, the daemon lock makes one daemon of those started by hand or by
// launchers that raced past a daemon exiting.
//
// # Protocol
//
// One line per message, "ns1 VERB key=value ...", values %XX-escaped
// (proto.go). The launcher sends "acquire kind= out= pid= cmd= handoff=1
// atgrant=1 [build= | ppid=] [measure=1] [remote=1 | local=1]" and waits
// for "grant job= cpu= node= mem_kib= [handoff=1 [atgrant=1]] [retry=N]",
// or, for remote=1 with a farm host free, "grant job= host=" (a
// DISTCC_HOSTS entry, never with handoff); then either execs the command
// (handoff: the slot is the process's from the grant on), or runs it and
// sends "done rss_kib=
// wall_us= status= [signal=9 [interrupted=1]]", or for a remote grant "done wall_us= status=
// [remote_fault=1]" (the daemon answers "ok", which the launcher does not
// wait for). remote=1: the command may run on a farm host; local=1: it
// is run here after distcc failed on one. "status" gets "status json=...",
// "ping" gets "pong". "jobserver name=PROG" (numasteal exec, package
// launch/buildexec) gets "jobserver build= slots=" carrying the two ends of
// the build's jobserver pipe (SCM_RIGHTS, Conn.ReadRights); the asking
// process becomes the build's root. Errors are "error code= msg=": code "version" for a
// line of another version (the daemon closes), "malformed", "verb",
// "order", "perm" (a peer of another uid, by SO_PEERCRED), "gone" (the
// process of the job's build has ended, see "Build identity": the
// launcher says so in one line and exits 1 without running its
// command). A daemon that
// does not know "handoff" never grants it, and a launcher that does not
// ask is never given it; a launcher that does not say atgrant=1, or a
// grant without it, means the older handoff: the launcher sends "exec"
// before it execs, and the slot is the process's from that word on; likewise a launcher that does not say remote=1
// is never granted a host.
//
// # Build identity
//
// A build is $NUMASTEAL_BUILD if set, else the innermost ancestor of the
// launcher that numasteal exec made a build's root (Builds.AddRoot), else
// the outermost ancestor process of the launcher whose command is a build
// tool (make, ninja, meson, cmake...), named by command, pid and start
// time; else the parent process. The daemon finds it from the launcher's pid (SO_PEERCRED), see
// Builds. Make under ninja
// under make is then one build (the outermost make); two make -j started
// side by side are two. Neither the process group (ninja gives each
// command its own) nor make's jobserver auth (make 4.3 passes "3,4" to
// every build) names a build. The daemon's queues are per build, and it
// admits their heads round robin (package launch/daemon). A build named
// by its build tool dies with it: when that process ends (make killed,
// or dead of SIGPIPE under "make | head"), the daemon, which watches it
// with a pidfd, drops the build's waiting jobs, and their launchers exit
// at once instead of compiling for nobody; its running jobs end as they
// would. A build named by $NUMASTEAL_BUILD, or by a parent that is no
// build tool, is not watched.
package launch
