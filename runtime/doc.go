// Package runtime runs Go functions on pinned workers with hierarchical work
// stealing: one worker per usable CPU, each a goroutine locked to an OS thread
// that is pinned to that CPU, each with a lock-free Chase–Lev deque of tasks.
//
// Work enters in three ways:
//
//   - From outside the workers, Group.Go (on a Group made by Runtime.Group)
//     injects a task into the inbox of the worker the policy places it on.
//   - Inside a task, Ctx.Go, Ctx.Join and the Go method of a Group made by
//     Ctx.Group push onto the running worker's own deque (work-first): the
//     spawning task goes on and the new task runs later on this worker, or
//     earlier on a thief.
//   - Ctx.GoNext puts a continuation into the worker's LIFO slot, to run
//     next on this worker while its data is in cache.
//
// Waiting inside a task (Ctx.Wait, Group.Wait on a task's own group, Join)
// runs other tasks instead of blocking the thread; waiting elsewhere blocks.
// A helping wait is for the task's own children: see Ctx.Wait for why a
// group shared with other waiting tasks can deadlock it.
// An idle worker searches briefly and then parks; see park.go for the
// protocol that guarantees no wake-up is lost.
//
// Every task reports exactly one outcome to its group: it succeeded, failed
// with an error, panicked (the panic is recovered, the worker survives and the
// group's error carries the value and stack) or was canceled before it started.
//
// The runtime runs Go functions only. External processes run as placed,
// admitted tasks through package proc, built on Runtime.Place, Runtime.Load
// and Runtime.Pinned.
//
// The file layout follows the concerns: internal/deque (local run queue),
// worker.go (the worker loop), park.go (idle, spinning and wake-up),
// group.go, join.go and jobs.go (fork-join), task.go and ctx.go (tasks and
// their context), inbox.go (injection), policy.go (the balancer's hooks),
// counters.go and counter.go (statistics),
// runtime.go and config.go (life cycle).
package runtime
