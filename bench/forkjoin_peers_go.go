package bench

import (
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/numasteal/numasteal/examples/forkjoin/msort"
	"github.com/numasteal/numasteal/runtime"
)

// fjSample is one measurement of one contender of bench forkjoin --peers.
type fjSample struct {
	runtime, workload string
	threads           int
	// ns is the run's CPU time on one thread, its wall time on more;
	// serialNs the language's own serial loop, measured beside it.
	ns, serialNs float64
	wallNs       float64
	waitNs       float64 // the process's threads' time on a run queue
}

// sumGrain is the chunk ParallelFor and the goroutines' sum hand to fn:
// picked by hand (a few hundred chunks of 100M), as ParallelFor needs.
const sumGrain = 1 << 16

// goPeers holds the in-process contenders of bench forkjoin --peers and
// their inputs, shared by every round.
type goPeers struct {
	o         PeersOptions
	one, all  *runtime.Runtime
	fibJobs   [2]*runtime.Jobs[int, int] // one, all: a fork per call
	cutJobs   [2]*runtime.Jobs[int, int] // one, all: with the cutoff
	nopJobs   [2]*runtime.Jobs[struct{}, struct{}]
	sumInput  []int64
	sortInput []int
	sortWant  []int
	sortBuf   []int
	sortTmp   []int
}

func newGoPeers(o PeersOptions, one, all *runtime.Runtime) *goPeers {
	g := &goPeers{o: o, one: one, all: all}
	for i, rt := range []*runtime.Runtime{one, all} {
		g.fibJobs[i] = fibJobsCutoff(rt, 2)
		g.cutJobs[i] = fibJobsCutoff(rt, o.Cutoff)
		g.nopJobs[i] = runtime.NewJobs(rt, func(*runtime.Ctx, struct{}) (struct{}, error) { return struct{}{}, nil })
	}
	g.sumInput = make([]int64, o.SumN)
	for i := range g.sumInput {
		g.sumInput[i] = int64(i)
	}
	g.sortInput = msort.RandomInts(o.SortN, 1)
	g.sortWant = slices.Sorted(slices.Values(g.sortInput))
	g.sortBuf, g.sortTmp = make([]int, o.SortN), make([]int, o.SortN)
	return g
}

// round measures every in-process contender once, each workload's serial
// loop first.
func (g *goPeers) round(ctx context.Context) ([]fjSample, error) {
	o := g.o
	var out []fjSample
	var serial float64
	add := func(name, workload string, threads int, m measurement) {
		ns := m.wall
		if threads == 1 {
			ns = m.cpu
		}
		out = append(out, fjSample{runtime: name, workload: workload, threads: threads,
			ns: ns, serialNs: serial, wallNs: m.wall, waitNs: m.wait})
	}
	rts := []*runtime.Runtime{g.one, g.all}
	if g.all.Workers() < 2 {
		rts = rts[:1]
	}
	threads := g.all.Workers()
	wantFib := fibSerial(o.FibN)
	checkInt := func(what string, got, want int) error {
		if got != want {
			return fmt.Errorf("bench: %s computed %d, want %d", what, got, want)
		}
		return nil
	}

	// fib with a fork per call, then with the cutoff.
	var got int
	m, err := inTask(ctx, g.one, func(*runtime.Ctx) error { got = fibSerial(o.FibN); return nil })
	if err != nil {
		return nil, err
	}
	serial = m.cpu
	for _, w := range []struct {
		workload string
		cutoff   int
		jobs     [2]*runtime.Jobs[int, int]
	}{{"fib", 2, g.fibJobs}, {"cutoff", o.Cutoff, g.cutJobs}} {
		for i, rt := range rts {
			m, err := inTask(ctx, rt, func(c *runtime.Ctx) error {
				a, b, err := w.jobs[i].Join(c, o.FibN-1, o.FibN-2)
				got = a + b
				return err
			})
			if err == nil {
				err = checkInt("Jobs.Join "+w.workload, got, wantFib)
			}
			if err != nil {
				return nil, err
			}
			add("numasteal Jobs.Join", w.workload, rt.Workers(), m)
		}
		for _, rt := range rts {
			m, err := inTask(ctx, rt, func(c *runtime.Ctx) error { got = fibJoinCutoff(c, o.FibN, w.cutoff); return nil })
			if err == nil {
				err = checkInt("Ctx.Join "+w.workload, got, wantFib)
			}
			if err != nil {
				return nil, err
			}
			add("numasteal Ctx.Join", w.workload, rt.Workers(), m)
		}
		m := wall(func() { got = fibGoroutinesCutoff(o.FibN, w.cutoff) })
		if err := checkInt("goroutines "+w.workload, got, wantFib); err != nil {
			return nil, err
		}
		add("Go goroutines", w.workload, threads, m)
		var gerr error
		m = wall(func() { got, gerr = fibErrgroupCutoff(o.FibN, w.cutoff) })
		if gerr == nil {
			gerr = checkInt("errgroup "+w.workload, got, wantFib)
		}
		if gerr != nil {
			return nil, gerr
		}
		add("Go errgroup", w.workload, threads, m)
	}

	// The sum.
	wantSum := int64(o.SumN) * int64(o.SumN-1) / 2
	// An untimed pass first: the peers sum memory they have just written,
	// while this array sat untouched during the peers' runs.
	sum := sumInts(g.sumInput)
	if m, err = inTask(ctx, g.one, func(*runtime.Ctx) error { sum = sumInts(g.sumInput); return nil }); err != nil {
		return nil, err
	}
	serial = m.cpu
	for _, rt := range rts {
		var total atomic.Int64
		m, err := inTask(ctx, rt, func(c *runtime.Ctx) error {
			return c.ParallelFor(0, len(g.sumInput), sumGrain, func(_ *runtime.Ctx, lo, hi int) error {
				total.Add(sumInts(g.sumInput[lo:hi]))
				return nil
			})
		})
		if err == nil {
			err = checkInt("ParallelFor sum", int(total.Load()), int(wantSum))
		}
		if err != nil {
			return nil, err
		}
		add("numasteal ParallelFor", "sum", rt.Workers(), m)
	}
	m = wall(func() { sum = sumGoroutines(g.sumInput, threads) })
	if err := checkInt("goroutines sum", int(sum), int(wantSum)); err != nil {
		return nil, err
	}
	add("Go goroutines", "sum", threads, m)

	// The merge sort.
	copy(g.sortBuf, g.sortInput)
	if m, err = inTask(ctx, g.one, func(*runtime.Ctx) error { slices.Sort(g.sortBuf); return nil }); err != nil {
		return nil, err
	}
	serial = m.cpu
	for _, rt := range rts {
		copy(g.sortBuf, g.sortInput)
		m, err := inTask(ctx, rt, func(c *runtime.Ctx) error {
			return msort.SortIn(c, g.sortBuf, g.sortTmp, msort.DefaultGrain)
		})
		if err == nil && !slices.Equal(g.sortBuf, g.sortWant) {
			err = fmt.Errorf("bench: merge sort: result differs from slices.Sort")
		}
		if err != nil {
			return nil, err
		}
		add("numasteal Ctx.Join", "sort", rt.Workers(), m)
	}

	// Empty spawn+join.
	serial = 0
	for i, rt := range rts {
		m, err := inTask(ctx, rt, func(c *runtime.Ctx) error {
			for range o.Joins {
				if _, _, err := g.nopJobs[i].Join(c, struct{}{}, struct{}{}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		add("numasteal Jobs.Join", "spawn", rt.Workers(), m)
		m, err = inTask(ctx, rt, func(c *runtime.Ctx) error {
			for range o.Joins {
				if err := c.Join(nop, nop); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		add("numasteal Ctx.Join", "spawn", rt.Workers(), m)
	}
	add("Go goroutines", "spawn", threads, wall(func() {
		var wg sync.WaitGroup
		for range o.Joins {
			wg.Add(1)
			go wg.Done()
			wg.Wait()
		}
	}))
	return out, nil
}

// measurement is one timed run: CPU time of the thread that ran it (where
// it ran on one), wall time, and the process's run-queue wait meanwhile.
type measurement struct{ cpu, wall, wait float64 }

// inTask runs f as a task on rt and measures it from inside the task: the
// thread's CPU time (meaningful on a one-worker runtime, whose thread does
// all the work) and the wall time to f's return, by which every fork f
// made has joined. It waits for the task's end on a channel before
// Group.Wait, so that the task runs on a worker's pinned thread: a waiter
// in Wait may run a group's task itself, on its own unpinned goroutine
// (the lent worker, runtime/lend.go).
func inTask(ctx context.Context, rt *runtime.Runtime, f func(*runtime.Ctx) error) (measurement, error) {
	var m measurement
	w0 := runDelayNs()
	done := make(chan struct{})
	g := rt.Go(ctx, func(c *runtime.Ctx) error {
		defer close(done)
		goruntime.LockOSThread() // a worker's goroutine is locked already: this only asserts it
		defer goruntime.UnlockOSThread()
		c0, _ := threadCPU()
		start := time.Now()
		err := f(c)
		m.wall = float64(time.Since(start).Nanoseconds())
		c1, _ := threadCPU()
		m.cpu = float64((c1 - c0).Nanoseconds())
		return err
	})
	<-done
	err := g.Wait()
	m.wait = runDelayNs() - w0
	return m, err
}

// wall measures f on the calling goroutine: wall time and run-queue wait.
func wall(f func()) measurement {
	w0 := runDelayNs()
	ns := timeIt(f)
	return measurement{cpu: ns, wall: ns, wait: runDelayNs() - w0}
}

// runDelayNs sums the time this process's threads have waited on a run
// queue for a CPU: the second field of /proc/self/task/*/schedstat; 0
// where Linux does not tell.
func runDelayNs() float64 {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	var sum float64
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			v, _ := strconv.ParseUint(f[1], 10, 64)
			sum += float64(v)
		}
	}
	return sum
}

// fibJobsCutoff returns fib as a runtime.Jobs with a fork at every call
// with n >= cutoff and the serial recursion below it (cutoff 2: a fork per
// call). A leaf (n < 2) returns n as the serial recursion's do, without a
// call, and is tested first, before the cutoff, in every Go contender as
// in every peer's fib_fork: half of a fork-per-call fib's calls are
// leaves, and testing the cutoff first costs them a load and a second
// comparison (about 8% of a fork-per-call fib(30) on one worker).
func fibJobsCutoff(rt *runtime.Runtime, cutoff int) *runtime.Jobs[int, int] {
	var fib *runtime.Jobs[int, int]
	fib = runtime.NewJobs(rt, func(c *runtime.Ctx, n int) (int, error) {
		if n < 2 {
			return n, nil
		}
		if n < cutoff {
			return fibSerial(n), nil
		}
		a, b, err := fib.Join(c, n-1, n-2)
		return a + b, err
	})
	return fib
}

// fibJoinCutoff is fibJobsCutoff through Ctx.Join and closures.
func fibJoinCutoff(c *runtime.Ctx, n, cutoff int) int {
	if n < 2 {
		return n
	}
	if n < cutoff {
		return fibSerial(n)
	}
	var a, b int
	c.Join(
		func(c *runtime.Ctx) error { a = fibJoinCutoff(c, n-1, cutoff); return nil },
		func(c *runtime.Ctx) error { b = fibJoinCutoff(c, n-2, cutoff); return nil },
	)
	return a + b
}

// fibGoroutinesCutoff is fibJobsCutoff with a goroutine per fork and a
// sync.WaitGroup.
func fibGoroutinesCutoff(n, cutoff int) int {
	if n < 2 {
		return n
	}
	if n < cutoff {
		return fibSerial(n)
	}
	var a, b int
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); a = fibGoroutinesCutoff(n-1, cutoff) }()
	go func() { defer wg.Done(); b = fibGoroutinesCutoff(n-2, cutoff) }()
	wg.Wait()
	return a + b
}

// fibErrgroupCutoff is fibJobsCutoff with an errgroup.Group per fork.
func fibErrgroupCutoff(n, cutoff int) (int, error) {
	if n < 2 {
		return n, nil
	}
	if n < cutoff {
		return fibSerial(n), nil
	}
	var a, b int
	var g errgroup.Group
	g.Go(func() (err error) { a, err = fibErrgroupCutoff(n-1, cutoff); return })
	g.Go(func() (err error) { b, err = fibErrgroupCutoff(n-2, cutoff); return })
	err := g.Wait()
	return a + b, err
}

// forks is the number of forks of fib(n) with a fork at every call with
// n >= cutoff.
func forks(n, cutoff int) int64 {
	memo := make([]int64, n+1)
	for k := range memo {
		if k >= cutoff {
			memo[k] = 1 + memo[k-1] + memo[k-2]
		}
	}
	return memo[n]
}

func sumInts(v []int64) int64 {
	var s int64
	for _, x := range v {
		s += x
	}
	return s
}

// sumGoroutines sums v with one goroutine per thread, each over its part.
func sumGoroutines(v []int64, threads int) int64 {
	parts := make([]int64, threads)
	var wg sync.WaitGroup
	for i := range threads {
		lo, hi := len(v)*i/threads, len(v)*(i+1)/threads
		wg.Go(func() { parts[i] = sumInts(v[lo:hi]) })
	}
	wg.Wait()
	return sumInts(parts)
}
