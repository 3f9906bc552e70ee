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
// Runtime.Load for the placement, Runtime.Pinned and Ctx.CPU for the
// affinity, and a task injected into a Runtime.Group for the fork.
//
// # The life of a process task
//
//  1. Admission. Start queues the request for its slots (slotSem) at
//     once, so requests are served in the order Start was called. Slots
//     bound how many processes run at once; they are not workers, so a
//     worker never sits blocked on a child. Config.Admit is passed next.
//  2. Fork. A Go task injected into the runtime picks the CPU at that
//     moment (pickCPU) and starts the command as a task of the runner's
//     supervise.Supervisor, confined to that CPU (or its node) from its
//     first instruction: it forks from the Supervisor's kept thread
//     pinned to that CPU (or one narrowed to the node's CPUs for the
//     fork; supervise.StartUnmonitored). The child's stdin is /dev/null,
//     opened once per runner, and its stdout and stderr are two files of
//     the runner's (captures): no pipe, no goroutine copying output. A
//     program name is looked up in PATH once per runner. The worker then
//     goes back to other Go tasks.
//  3. Wait. Command.Started, when set, is given the supervised task (to
//     watch its memory, to stop it). The task's own goroutine, not a
//     worker, is its supervisor's monitor (supervise.Task.Monitor): it
//     waits for the main child's exit in Go's poller, burning no CPU, and
//     ends the task when it exits or its context is done (the caller's
//     context, its timeout, Runner.Close, or the runtime closing with
//     runtime.Cancel). Runner.Run does all of it in the caller's
//     goroutine; Start in a goroutine of its own.
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
