// Package runtime runs Go functions on pinned workers with hierarchical work
// stealing: one worker per usable CPU, each a goroutine locked to an OS thread
// that is pinned to that CPU, each with a lock-free Chase–Lev deque of tasks.
//
// # Who submits and who waits
//
// How work is submitted and waited for depends on the caller, and the
// receiver of each method names the caller:
//
//	caller                  submit                      wait
//	----------------------  --------------------------  ----------------------
//	a goroutine outside     Runtime.Go, Group.Go,       Group.Wait: borrows
//	the workers             Group.Spawn: inject         parked workers, then
//	                                                    blocks
//	a task, through its     Ctx.Go, Ctx.Spawn: push     Ctx.Wait: helps
//	Ctx                     Ctx.GoNext: LIFO slot
//	                        Ctx.Join, Ctx.ParallelFor, Jobs.Join: fork and join
//
// Inject: put the task into the inbox of the worker the balancing policy
// places it on (Runtime.Place from the caller's CPU) and have a worker
// woken if none is looking for work. Push: onto the running worker's own deque,
// work-first: the task goes on, and the new one runs later on this worker
// or earlier on a thief. LIFO slot: to run next on this worker while the
// data its spawner touched is in cache. Borrow: while the workers that
// hold the group's injected tasks are parked, the waiting goroutine runs
// those tasks itself, as those workers, whose threads sleep on (lend.go);
// an injection's wake-up is left to a goroutine meanwhile, so a small
// group submitted to an idle runtime wakes no thread. Block: the
// goroutine sleeps until the group is done. Help: the waiting task's
// worker runs other tasks meanwhile (its own queues, then steals) and
// parks when there are none.
//
// A Group is the set of tasks waited for together (errgroup semantics).
// Runtime.Group makes one for the outside world; Ctx.Group makes one for a
// task's children, used only through that task's Ctx. A task may submit
// to and wait on any group through its Ctx, but a helping wait is for the
// task's own children: see Ctx.Wait for why a group shared with other
// waiting tasks can deadlock it.
//
// # Fork-join
//
// Ctx.Join, Jobs.Join and Ctx.ParallelFor fork lazily (promote.go): a
// fork is remembered on the worker's own list and runs as a plain call at
// its join unless a thief could use it meanwhile, in which case the oldest
// remembered fork is pushed onto the deque. Jobs.Join carries its argument
// in a job object that the fork list keeps for the next Join at the same
// depth, and allocates nothing; a closure Join allocates the second
// closure (it may run on another goroutine, so it escapes). ParallelFor
// with grain <= 0 sizes its chunks by their running time and splits the
// rest of its range only when a thief is idle.
//
// An idle worker searches briefly and then parks; see park.go for the
// protocol that guarantees no wake-up is lost. Where an injected task
// lands, whom an idle worker robs and how much it takes are the balancing
// policy's decisions (Config.Policy, package balance; policy.go).
//
// Every task reports exactly one outcome to its group: it succeeded, failed
// with an error, panicked (in its body or in a half of any Join in it, run
// here or by a thief: the panic is recovered once every half has run, the
// worker survives and the group's error carries the value and stack) or was
// canceled before it started.
//
// The runtime runs Go functions only. External processes run as placed,
// admitted tasks through package proc, built on Runtime.Place, Runtime.Load
// and Runtime.Pinned.
//
// Files, one concern each: runtime.go and config.go (life cycle), worker.go
// (the scheduler loop, stealing), internal/deque (the local run queue),
// inbox.go (injection), park.go (idle, spinning and wake-up) and sched.go
// (its packed counts), lend.go (outside injections' late wake-up and the
// workers lent to outside waiters), policy.go (the balancing policy's hooks, placement,
// hand-off), periodic.go (periodic balancing and the coarse clock),
// task.go and ctx.go (tasks and what they see), group.go, join.go and
// jobs.go (fork-join), sync.go (small atomic helpers), counters.go (the
// workers' statistics) and counter.go (Counter).
package runtime
