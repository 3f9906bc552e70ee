// Package proc runs external processes (compilers, linkers, scripts) as
// placed, admitted tasks of a runtime.Runtime, and supervises each until
// every process it started is gone.
//
// A Runner admits a Command when its slots are free (and a further gate,
// such as a make jobserver token, allows), places it at fork time with the
// runtime's balancing policy (balance.PlaceExec, seeing the runner's
// processes as load), starts it confined to that CPU or its node, waits
// for it without holding a worker, and delivers exactly one Result: its
// Outcome (succeeded, failed or canceled, as a Go task's), exit status,
// signal, CPU times and the captured output. Package runtime stays Go
// tasks only; proc uses its exported seams: Runtime.Place and
// Runtime.Load for the placement, and Runtime.Pinned for the affinity.
//
// # The life of a process task
//
//  1. Admission. Start (or Queue) queues the request for its slots
//     (slotSem) at once, so requests are served in the order they were
//     made. Slots bound how many processes run at once; they are not
//     workers, so a worker never sits blocked on a child. A task granted
//     its slots by another's release runs next on that one's P, on what
//     is left of its time slice, and yields once before its fork when
//     that slice is 4 ms old (handOverYield): a chain of short tasks
//     does not run on one slice until Go's sysmon takes its P (step 3).
//     Config.Admit is passed next.
//  2. Fork. The task's own goroutine, not a worker, picks the CPU at that
//     moment (pickCPU, from the CPU it runs on) and starts the command as
//     a task of the runner's supervise.Supervisor from its own thread
//     (supervise.StartHere), confined to that CPU (or its node) from its
//     first instruction: the thread is narrowed to the set for the fork,
//     and stays so until the reap, so that the child's exit wakes it on
//     the CPU the child frees and the next task's fork follows there.
//     The thread stays locked to the goroutine until the child is reaped,
//     so the child's Pdeathsig fires only if this process dies. The
//     child's stdin is /dev/null, opened once per runner, and its stdout
//     and stderr are two files of the runner's (captures): no pipe, no
//     goroutine copying output. A program name is looked up in PATH once
//     per runner.
//  3. Wait. Command.Started, when set, is given the supervised task (to
//     watch its memory, to stop it). The same goroutine is its
//     supervisor's monitor (supervise.Task.Monitor): its thread sleeps in
//     poll(2) on the child's pidfd, burning no CPU, until the child exits
//     (which wakes that thread and no other) or its context is done (the
//     caller's context, its timeout, Runner.Close, or the runtime closing
//     with runtime.Cancel). From the decision to run a command to its
//     reap, no other goroutine or thread is woken. The waiting thread
//     holds a Go P in that system call; a program that runs several
//     processes at once gives Go Ps to spare (SpareProcs; numasteal run
//     and bench sdet call it), or Go's sysmon takes the Ps back every
//     20 µs. Runner.Run does all of it in the caller's goroutine,
//     Queued.Run in the goroutine that calls it, and Start in a goroutine
//     of its own.
//  4. Clean-up. Every process of the task is gone and reaped before the
//     output files are drained into the Result (an fstat each when the
//     command printed nothing) and emptied for the next task, the slots
//     are released, Config.Reaped is called, and the result is
//     delivered. While the task runs, Output.Len, Bytes and Tail read the
//     files.
//
// # How every process ends
//
// Package supervise does it, and its doc says which mechanism covers
// which path: each command leads a process group of its own, carries an
// environment marker that its descendants inherit, and runs in a cgroup
// of its own where cgroup v2 allows; its direct child gets Pdeathsig from
// a thread that lives as long as the Supervisor; with Subreaper, orphans
// come here and are reaped; a watchdog process, when the Supervisor's
// owner asks for one (numasteal run does), ends everything if this
// process is killed. For a process task:
//
//   - Exited by itself (Succeeded, or Failed with an *ExitError): whatever
//     it left running is killed (group, cgroup or marker), then reaped.
//   - Timed out (Command.Timeout; Failed, TimedOut, ErrTimeout) or
//     canceled while running (Canceled with the context's cause): SIGTERM
//     to all of it, and SIGKILL after Config.Grace (the Supervisor's) or
//     at once on supervise.Supervisor.KillAll.
//   - Canceled before the fork, or not startable (Failed with the exec
//     error): there is no process; Pid is -1.
//
// A Runner makes its own Supervisor unless Config.Supervisor gives one;
// two Supervisors with Subreaper in one process would reap each other's
// children, so a program that runs several runners shares one.
//
// Files: runner.go (Runner, Config, Command, the admission, fork and wait
// of one task), place.go (placement and the runner's Load), slots.go (the
// slot semaphore), result.go (Result, ExitError), output.go (captured
// output that spills to a file) and capture.go (the reused files children
// write their output to).
package proc
