package runtime

import (
	"context"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/internal/corpus"
	"github.com/numasteal/numasteal/internal/testenv"
	"github.com/numasteal/numasteal/topology"
)

// virtualRuntime starts a runtime on corpus machine name: one unpinned
// worker per CPU of the dump, whatever this machine has.
func virtualRuntime(t *testing.T, name string) *Runtime {
	t.Helper()
	return virtualRuntimeWith(t, name, "", Config{})
}

// virtualRuntimeWith is virtualRuntime with cfg (its Topology set here)
// and the balancing policy called policy ("" for the default).
func virtualRuntimeWith(t *testing.T, name, policy string, cfg Config) *Runtime {
	t.Helper()
	topo, err := topology.Discover(topology.WithRoot(corpus.Extract(t, name)))
	if err != nil {
		t.Fatalf("Discover %s: %v", name, err)
	}
	pol, err := balance.ByName(policy)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Topology, cfg.Policy = topo, pol
	return newTestRuntime(t, cfg)
}

// burn does a little arithmetic that the compiler cannot drop.
func burn(n int) int {
	x := n
	for i := range n {
		x = x*31 + i
	}
	goruntime.KeepAlive(x) // callers drop the result: the loop must stay
	return x
}

// requireRanOnce fails t unless every counter in runs is exactly 1: each
// task ran once, none was lost or run twice.
func requireRanOnce(t *testing.T, runs []atomic.Int32) {
	t.Helper()
	for i := range runs {
		if n := runs[i].Load(); n != 1 {
			t.Fatalf("task %d ran %d times", i, n)
		}
	}
}

// runBursts runs bursts of fine-grained ParallelFor work from outside the
// workers, separated by pauses of random length (up to 1 ms) during which
// some or all workers park.
func runBursts(t *testing.T, rt *Runtime, rounds int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var sink atomic.Int64
	for range rounds {
		n := 32 + rng.IntN(1024)
		err := parallelFor(rt, context.Background(), 0, n, 1+rng.IntN(4), func(c *Ctx, lo, hi int) error {
			sink.Add(int64(burn(10000 * (hi - lo))))
			return nil
		})
		if err != nil {
			t.Error(err)
			return
		}
		time.Sleep(time.Duration(rng.IntN(1000)) * time.Microsecond)
	}
}

// TestAtMostHalfOfBusyWorkersSpin samples nSpinning and nIdle while 16
// virtual workers run bursts of work, and checks park.go's rule 4: at most
// half of the busy (not parked) workers spin.
//
// The bound checked is spinning <= (busy+1)/2 + 1, busy = workers - nIdle.
// The rule lets a worker start spinning while 2*spinning < busy, which keeps
// spinning <= (busy+1)/2 at that moment. The +1 is the documented exception
// (park.go, steps 1 and 3): a producer's notify and a parking worker that
// has just seen work take the first spinning slot by a CAS 0→1 without the
// half rule, and notify does so before wakeOne decrements nIdle, so for a
// moment one spinner is counted while its worker is still parked.
//
// The rule is checked where a worker starts spinning, not afterwards: busy
// workers that then run out of work park while the spinners still search,
// so busy may shrink under the spinners for the length of a search (Go's
// nmspinning rule behaves the same). The sampler therefore compares a
// sample's spinning count with the largest busy count seen since spinning
// was last below that count — the spinner that brought it there entered in
// that window; both counts come from one load of rt.sched.
// When more than samplerGap may have passed between two of its loads (the
// sampler was descheduled: the race detector and a loaded machine do that),
// it has not seen the busy counts between them, and the windows restart as
// if any count had been seen before that sample is judged. It counts the
// samples that only the window excuses, and the pauses, for the log.
func TestAtMostHalfOfBusyWorkersSpin(t *testing.T) {
	rt := virtualRuntime(t, "16amd64-8n2c")
	n := int32(rt.Workers())
	if n != 16 {
		t.Fatalf("%d workers on 16amd64-8n2c, want 16", n)
	}
	// One P per worker, as on the real 16-CPU machine: with fewer Ps than
	// workers, at most GOMAXPROCS workers could be busy at once.
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(int(n) + 1))

	stop := make(chan struct{})
	done := make(chan spinReport)
	go func() { done <- sampleSpinning(rt, n, stop) }()
	var load sync.WaitGroup
	for g := range 2 {
		load.Add(1)
		go func() {
			defer load.Done()
			runBursts(t, rt, 100, uint64(g))
		}()
	}
	load.Wait()
	close(stop)
	r := <-done

	t.Logf("%d samples, %d with a spinner, at most %d spinning, %d excused by the window, %d pauses of the sampler over %v; (busy, spinning) → samples: %v",
		r.samples, r.withSpinner, r.maxSpinning, r.excused, r.gaps, samplerGap, r.seen)
	if r.bad > 0 {
		t.Errorf("%d of %d samples had more than half of the busy workers spinning (+1): (peak busy, spinning) → samples %v",
			r.bad, r.samples, r.over)
	}
	if r.withSpinner == 0 || r.maxSpinning < 2 {
		t.Errorf("at most %d workers spun at once: the workload did not exercise the rule", r.maxSpinning)
	}
}

// samplerGap is the longest pause between two samples that
// sampleSpinning trusts to have seen every change of the busy count that
// matters: a worker parks or starts spinning in a few microseconds.
const samplerGap = 16 * time.Microsecond

// spinReport is what sampleSpinning saw.
type spinReport struct {
	samples, withSpinner, bad, excused int
	gaps                               int // pauses over samplerGap
	maxSpinning                        int32
	seen, over                         map[[2]int32]int // (busy, spinning) → samples
}

// sampleSpinning samples rt's spinning and idle counts until stop closes;
// see TestAtMostHalfOfBusyWorkersSpin for the bound.
func sampleSpinning(rt *Runtime, n int32, stop <-chan struct{}) spinReport {
	r := spinReport{seen: map[[2]int32]int{}, over: map[[2]int32]int{}}
	// peak[k] is the largest busy seen since spinning was last below k.
	peak := make([]int32, n+2)
	prev := time.Now() // a time before the previous sample's load
	for i := 0; ; i++ {
		select {
		case <-stop:
			return r
		default:
		}
		before := time.Now()
		s, idle := rt.sched.load()
		// A sampler descheduled between two loads (the race detector, a
		// loaded machine, Gosched below) misses how busy the runtime was
		// meanwhile: the spinners that entered then may have seen any
		// count, so the windows restart from "any" before this sample is
		// judged. The clock read after this load less the one read
		// before the previous load bounds the time between the two loads,
		// wherever the sampler was paused.
		if time.Since(prev) > samplerGap {
			r.gaps++
			for k := range peak {
				peak[k] = n
			}
		}
		prev = before
		busy := n - idle
		s = min(max(s, 0), n+1)
		for k := range peak {
			if int32(k) > s {
				peak[k] = 0
			} else {
				peak[k] = max(peak[k], busy)
			}
		}
		r.samples++
		r.seen[[2]int32{busy, s}]++
		if s > 0 {
			r.withSpinner++
		}
		r.maxSpinning = max(r.maxSpinning, s)
		bound := func(busy int32) int32 { return (busy+1)/2 + 1 }
		switch {
		case s > bound(peak[s]):
			r.bad++
			r.over[[2]int32{peak[s], s}]++
		case s > bound(busy):
			r.excused++
		}
		if i%64 == 0 {
			goruntime.Gosched()
		}
	}
}

// lostWakeupBound is how long an injected task may wait for a worker before
// the test calls it lost. A real wake-up takes microseconds; the bound only
// has to survive a loaded machine and the race detector.
const lostWakeupBound = 30 * time.Second

// waitAllParked waits until every worker of rt is parked and none spins.
func waitAllParked(t testing.TB, rt *Runtime) {
	t.Helper()
	deadline := time.Now().Add(lostWakeupBound)
	for rt.sched.idle() != int32(rt.Workers()) || rt.sched.spinning() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("workers did not all park within %v: %d of %d parked, %d spinning",
				lostWakeupBound, rt.sched.idle(), rt.Workers(), rt.sched.spinning())
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// awaitRan blocks the calling task's worker (not helping) until ran is
// closed, or fails after lostWakeupBound saying that what did not run.
func awaitRan(rt *Runtime, ran <-chan struct{}, what string) error {
	select {
	case <-ran:
		return nil
	case <-time.After(lostWakeupBound):
		return fmt.Errorf("%s did not run in %v; %s", what, lostWakeupBound, idleState(rt))
	}
}

// idleState describes rt's idle bookkeeping and queues, for failure messages.
func idleState(rt *Runtime) string {
	s := fmt.Sprintf("nIdle %d, nSpinning %d, queued:", rt.sched.idle(), rt.sched.spinning())
	for _, w := range rt.workers {
		rt.idle.mu.Lock()
		parked := w.parked
		rt.idle.mu.Unlock()
		s += fmt.Sprintf(" w%d=%d", w.id, rt.load().Queued(w.cpu))
		if parked {
			s += "(parked)"
		}
		if w.busy.Load() {
			s += "(busy)"
		}
	}
	return s
}

// stressRuntimes returns the runtimes the lost-wake-up tests run on: the
// live machine and 16 virtual workers (more workers than CPUs, so workers
// are often preempted in the middle of the protocol).
// Without the shared corpus only the live machine is tested.
func stressRuntimes(t *testing.T) []namedRuntime {
	rts := []namedRuntime{{"live", newTestRuntime(t, Config{})}}
	if _, err := testenv.SharedDir(); err != nil {
		t.Logf("no virtual machine: %v", err)
		return rts
	}
	return append(rts, namedRuntime{"16amd64-8n2c", virtualRuntime(t, "16amd64-8n2c")})
}

type namedRuntime struct {
	name string
	rt   *Runtime
}

// TestNoLostWakeupOnInject injects one task at a time into a runtime whose
// workers are parked or parking, and checks that each runs within
// lostWakeupBound. The task is injected (a) once every worker is parked,
// (b) right after the previous task ended, while its worker is on its way
// to park, and (c) after a random pause of up to 50µs, to land anywhere in
// the park protocol.
func TestNoLostWakeupOnInject(t *testing.T) {
	for _, nr := range stressRuntimes(t) {
		rt := nr.rt
		t.Run(nr.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			ran := make(chan int, 1)
			for round := range 1500 {
				switch round % 3 {
				case 0:
					waitAllParked(t, rt)
				case 2:
					time.Sleep(time.Duration(rng.IntN(50)) * time.Microsecond)
				}
				rt.Go(context.Background(), func(*Ctx) error { ran <- round; return nil })
				select {
				case got := <-ran:
					if got != round {
						t.Fatalf("round %d: task of round %d ran", round, got)
					}
				case <-time.After(lostWakeupBound):
					t.Fatalf("round %d: injected task did not run within %v (lost wake-up?): %s",
						round, lostWakeupBound, idleState(rt))
				}
			}
		})
	}
}

// TestNoLostWakeupPingPong bounces control between an outside goroutine and
// tasks: each round injects a task that spawns a child onto its worker's
// deque (Ctx.Go) and returns; the child answers. Every round needs a
// parked or parking worker to notice an injection, and the spawning worker
// to run or lose its child while others park around it.
func TestNoLostWakeupPingPong(t *testing.T) {
	const pingPongRounds = 5000
	for _, nr := range stressRuntimes(t) {
		rt := nr.rt
		t.Run(nr.name, func(t *testing.T) {
			pong := make(chan int, 1)
			g := rt.Group(context.Background())
			for round := range pingPongRounds {
				g.Go(func(c *Ctx) error {
					inner := c.Group()
					c.Go(inner, func(*Ctx) error { pong <- round; return nil })
					if round%2 == 0 {
						return nil // the child is left to this worker or a thief
					}
					return c.Wait(inner)
				})
				select {
				case got := <-pong:
					if got != round {
						t.Fatalf("round %d: got the answer of round %d", round, got)
					}
				case <-time.After(lostWakeupBound):
					t.Fatalf("round %d: no answer within %v (lost wake-up?): %s",
						round, lostWakeupBound, idleState(rt))
				}
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			if c := countsOf(g); c.Succeeded != pingPongRounds {
				t.Errorf("counts %+v, want %d succeeded", c, pingPongRounds)
			}
		})
	}
}

// TestWorkersParkAfterBurst checks that a burst of work reaches the
// workers and that every worker parks again once it is over: the parks
// grow, or the lends do (the outside waiter may run the burst as the
// parked workers it borrows, whose threads never wake: lend.go), and
// nIdle reaches the number of workers with no spinner left.
func TestWorkersParkAfterBurst(t *testing.T) {
	for _, nr := range stressRuntimes(t) {
		rt := nr.rt
		t.Run(nr.name, func(t *testing.T) {
			for round := range 5 {
				before := rt.Stats().Total
				runBursts(t, rt, 1, uint64(round))
				waitAllParked(t, rt)
				after := rt.Stats().Total
				if after.Parks+after.Lent <= before.Parks+before.Lent {
					t.Errorf("round %d: parks %d → %d and lends %d → %d, want growth",
						round, before.Parks, after.Parks, before.Lent, after.Lent)
				}
				// Parked workers have folded: the snapshot is exact and
				// stays so while nothing runs.
				if again := rt.Stats().Total; again.TasksRun != after.TasksRun || again.Parks != after.Parks {
					t.Errorf("round %d: stats moved while every worker was parked: %+v then %+v", round, after, again)
				}
			}
		})
	}
}

// TestSpinningCountStaysConsistent injects tiny tasks from several
// goroutines into 16 virtual workers that keep parking and waking, and
// checks that nSpinning never leaves [0, workers] and returns to 0 once
// everything is parked: a spinning slot taken without being counted, or
// counted and never released, would make notify skip the wake-up of every
// later task (it sees "someone spins") — a lost wake-up.
func TestSpinningCountStaysConsistent(t *testing.T) {
	rt := virtualRuntime(t, "16amd64-8n2c")
	n := int32(rt.Workers())
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(int(n) + 1))
	stop := make(chan struct{})
	bad := make(chan int32, 1)
	go func() {
		for {
			select {
			case <-stop:
				close(bad)
				return
			default:
			}
			if s := rt.sched.spinning(); s < 0 || s > n {
				select {
				case bad <- s:
				default:
				}
			}
			goruntime.Gosched()
		}
	}()
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(p), 3))
			for range 250 {
				g := rt.Group(context.Background())
				for range 1 + rng.IntN(8) {
					g.Go(func(*Ctx) error { return nil })
				}
				if err := g.Wait(); err != nil {
					t.Error(err)
					return
				}
				if rng.IntN(4) == 0 {
					time.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if s, ok := <-bad; ok {
		t.Errorf("nSpinning was %d, outside [0, %d]", s, n)
	}
	waitAllParked(t, rt)
}

// Tasks on several workers that wait on one group (here an outside group
// whose only task is blocked) all park instead of polling, and all return
// once the group is done: every waiter is in the group's list, not only
// the first.
func TestSharedGroupWaitersPark(t *testing.T) {
	// The blocked task on worker 0, the waiters on workers 2, 4 and 6, each
	// in the inbox of a parked worker, which the runtime wakes for it:
	// placed by the balancing policy, two could land on one worker, and
	// then the second would wait for a thief while the first blocks.
	rt := virtualRuntime(t, "8em64t-2s2ca2c")
	placeOn(rt, func(n uint64) int { return int(2 * (n - 1) % 8) })
	ctx := context.Background()
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock() // registered after rt's Close: runs before it on failure
	shared := rt.Group(ctx)
	shared.Go(func(*Ctx) error { <-release; return nil })

	// Each waiter holds its worker until all have started, so that they
	// wait on distinct workers rather than nested on one.
	const waiters = 3
	var started sync.WaitGroup
	started.Add(waiters)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	var entered, returned atomic.Int32
	outer := rt.Group(ctx)
	for range waiters {
		outer.Go(func(x *Ctx) error {
			started.Done()
			select {
			case <-all:
			case <-time.After(10 * time.Second):
				return fmt.Errorf("the waiters did not all start: %s", idleState(rt))
			}
			entered.Add(1)
			err := x.Wait(shared)
			returned.Add(1)
			return err
		})
	}
	// Once all are in Wait, every worker but the blocked one ends up
	// parked.
	deadline := time.Now().Add(10 * time.Second)
	for entered.Load() != waiters {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d waiters in Wait after 10s; %s", entered.Load(), waiters, idleState(rt))
		}
		time.Sleep(time.Millisecond)
	}
	want := int32(len(rt.workers) - 1)
	for rt.sched.idle() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d workers parked after 10s, want all but the blocked one: a waiter is polling",
				rt.sched.idle(), len(rt.workers))
		}
		time.Sleep(time.Millisecond)
	}
	if n := returned.Load(); n != 0 {
		t.Fatalf("%d waiters returned before the group was done", n)
	}
	unblock()
	if err := outer.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := shared.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := returned.Load(); n != waiters {
		t.Fatalf("%d of %d waiters returned", n, waiters)
	}
}

// A task injected into the inbox of a worker that is blocked in another
// task is run by one of the parked workers: the owner's being "running"
// satisfies the parking invariant, so the wake-up must come from the
// injection's notify and the policies' hand-off, whatever the policy's
// gates (Hierarchical leaves a group's work to that group's idle CPUs).
// The blocked task waits for the injected one, so a miss would hang.
func TestBlockedOwnersInboxIsStolen(t *testing.T) {
	for _, machine := range []string{"8em64t-2s2ca2c", "16amd64-8n2c", "128ia64-17n4s2c"} {
		for _, policy := range []string{"hierarchical", "flat", "local"} {
			t.Run(machine+"/"+policy, func(t *testing.T) {
				var owner atomic.Int64
				rt := virtualRuntimeWith(t, machine, policy, Config{})
				placeOn(rt, func(uint64) int { return int(owner.Load()) })
				rng := rand.New(rand.NewPCG(uint64(len(machine)), uint64(len(policy))))
				for i := range 100 {
					owner.Store(int64(rng.IntN(rt.Workers())))
					ran := make(chan struct{})
					g := rt.Group(context.Background())
					g.Go(func(*Ctx) error { // blocks its worker until the next one ran
						return awaitRan(rt, ran, fmt.Sprintf("round %d: the task queued behind a blocked worker", i))
					})
					if rng.IntN(2) == 0 {
						time.Sleep(time.Duration(rng.IntN(100)) * time.Microsecond)
					}
					g.Go(func(*Ctx) error { close(ran); return nil })
					if err := g.Wait(); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// A task that queues a child on its own worker (Ctx.Go onto the deque, or
// Ctx.GoNext into the LIFO slot) and then blocks until the child has run
// gets the child run by another worker: the owner never comes back to it.
func TestBlockedOwnersChildIsStolen(t *testing.T) {
	for _, machine := range []string{"8em64t-2s2ca2c", "128ia64-17n4s2c"} {
		for _, policy := range []string{"hierarchical", "flat", "local"} {
			for _, via := range []string{"deque", "lifo"} {
				t.Run(machine+"/"+policy+"/"+via, func(t *testing.T) {
					rt := virtualRuntimeWith(t, machine, policy, Config{})
					rng := rand.New(rand.NewPCG(uint64(len(machine)), uint64(len(policy)+len(via))))
					for i := range 100 {
						pause := time.Duration(rng.IntN(100)) * time.Microsecond
						g := rt.Group(context.Background())
						g.Go(func(c *Ctx) error {
							ran := make(chan struct{})
							if pause > 50*time.Microsecond {
								time.Sleep(pause) // let the other workers park first
							}
							child := func(*Ctx) error { close(ran); return nil }
							if via == "lifo" {
								c.GoNext(g, child)
							} else {
								c.Go(g, child)
							}
							return awaitRan(rt, ran, fmt.Sprintf("round %d: the child of a blocked task", i))
						})
						if err := g.Wait(); err != nil {
							t.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// A helping wait (Ctx.Wait, a stolen Join's wait) must not return to its
// task with the worker still counted as spinning: the task then runs user
// code, not a search, while producers rely on a spinner to find their work.
func TestHelpingWaitReturnsNotSpinning(t *testing.T) {
	rt := virtualRuntime(t, "16amd64-8n2c")
	var bad, checks atomic.Int64
	check := func(c *Ctx) {
		checks.Add(1)
		if c.w.spinning {
			bad.Add(1)
		}
	}
	var rec func(c *Ctx, n int) error
	rec = func(c *Ctx, n int) error {
		if n < 2 {
			burn(500)
			return nil
		}
		if n%3 == 0 {
			g := c.Group()
			c.Go(g, func(c *Ctx) error { return rec(c, n-1) })
			c.Go(g, func(c *Ctx) error { return rec(c, n-2) })
			err := c.Wait(g)
			check(c)
			return err
		}
		err := c.Join(func(c *Ctx) error { return rec(c, n-1) }, func(c *Ctx) error { return rec(c, n-2) })
		check(c)
		return err
	}
	for range 50 {
		if err := rt.Go(context.Background(), func(c *Ctx) error { return rec(c, 16) }).Wait(); err != nil {
			t.Fatal(err)
		}
	}
	if bad.Load() > 0 {
		t.Errorf("%d of %d waits returned to their task with the worker counted as spinning", bad.Load(), checks.Load())
	}
}
