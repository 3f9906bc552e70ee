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
//     moment (pickCPU) and forks and execs the command confined to that
//     CPU (or its node) from its first instruction: directly from the
//     worker thread when that thread is pinned to exactly that CPU, else
//     through affinity.StartPinned. The child gets a process group of its
//     own. The worker then goes back to other Go tasks.
//  3. Wait. A plain goroutine, not a worker, waits for the child in
//     waitid(2) (blocked in the kernel, burning no CPU) while the task's
//     goroutine watches the context and the timeout.
//  4. Clean-up. The command's group is killed, the command and its
//     orphans are reaped, and only then are the slots released and the
//     result delivered.
//
// # How every process ends
//
// The mechanism is the process group (ninja's): each command leads a
// group of its own, and every path ends with SIGKILL to the whole group,
// so background jobs and grandchildren never outlive their task. The
// command is waited for with WNOWAIT first, so its pid, and with it the
// group's id, stays reserved until the group is killed: the signal cannot
// reach a stranger given the recycled id.
//
//   - Exited by itself (Succeeded, or Failed with an *ExitError): the rest
//     of its group gets SIGKILL, then everything is reaped.
//   - Timed out (Command.Timeout; Failed, TimedOut, ErrTimeout) or
//     canceled while running (the caller's context, Runner.Close, or the
//     runtime closing with runtime.Cancel; Canceled with that cause): the
//     group gets SIGTERM, and SIGKILL after Config.Grace or once the
//     command has exited, whichever comes first.
//   - Canceled before the fork, or not startable (Failed with the exec
//     error): there is no process; Pid is -1.
//   - Orphans: a grandchild whose parent exited is still in the group and
//     dies with it. It is reparented to init, which reaps it, unless
//     Config.Subreaper makes this process the subreaper: then it is
//     reparented here and reaped before the result is delivered.
//   - Escapees: a descendant that left the group (setsid, setpgid) is
//     not signalled. If it holds the output pipes open, the wait for the
//     command gives up on them after Config.Grace (exec.Cmd.WaitDelay).
//   - This process dies: nothing here ends the children; they run on,
//     reparented.
//
// Files: runner.go (Runner, Command, the admission, fork and wait of one
// task), place.go (placement and the runner's Load), slots.go (the slot
// semaphore), supervise_linux.go and supervise_other.go (process groups,
// signals, reaping, the subreaper), result.go (Result, ExitError) and
// output.go (captured output that spills to a file).
package proc
