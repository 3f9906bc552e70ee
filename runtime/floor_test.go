package runtime

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkFibFloor peels the cost of a Jobs fork into layers, fib(25)
// (121,392 joins) or fib(30) (1,346,268) per run, each layer adding one
// thing to the one before:
//
//	serial    the plain recursion
//	direct    Jobs' body signature, func(*Ctx, A) (R, error), called directly
//	funcval   the same through a func value, as Jobs calls its body
//	remember  funcval plus the remember and forget of an unpromoted fork
//	direct+remember  direct plus the same: the floor of a fork API whose
//	          body is called directly, not through a func value nor a
//	          Join frame (the user's code would call remember and forget)
//	jobs1w    Jobs.Join on a one-worker runtime
//	jobsAll   Jobs.Join on one worker per usable CPU
//	jobsAllEager  the same with promote's back-off off: every fork made
//	          while a thief could use work is promoted
//	closures  Ctx.Join with closures on a one-worker runtime (not a layer
//	          of the others: the closure form, for its own target)
//	allocs    the serial recursion with the two heap allocations that a
//	          closure Join's caller makes per call (the escaping second
//	          closure and the variable it assigns), and no runtime: the
//	          floor of the closure form
//	cutoff1w  jobs1w with a leaf cutoff: below n = 12 the body calls the
//	          serial function (233 calls), as Cilk's and Spice's users do
//	cutoffAll the same on one worker per usable CPU
//	pair      the serial recursion on two workers at once, one copy
//	          each (a Join of two closures), its times halved: what
//	          the machine gives a split with no cost at all, whose
//	          ratio to serial is 0.5 only where two CPUs running at
//	          once each run as fast as one alone (not a layer either:
//	          the floor that jobsAll's and cutoffAll's busy ratios
//	          stand on; 0.5 divided by it is the machine's speed-up).
//	          jobsAll/pair-busy, their ratio round by round, is at most
//	          2 where 2 workers would be as fast as the serial recursion
//	          on two CPUs that each ran as fast as one alone.
//
// An op is one round: every layer once, each timed inside a task of its
// runtime (serial too, on the one-worker runtime's pinned thread), in an
// order that rotates from round to round, so that on a shared machine
// each layer sees the same load. It reports each layer's median time
// (name-ns), the median of its per-round ratio to serial (name/serial)
// and, for the layers that run on one thread, the median of that ratio
// in thread CPU time (name/serial-cpu), which leaves out the time the
// thread was preempted; for the others, in busy time (name/serial-busy):
// the wall time less the least time any of the runtime's workers spent
// preempted on the run queue (schedstat), an upper bound of what the
// run would take on an idle machine:
//
//	go test -run '^$' -bench FibFloor/n=25 -benchtime 100x ./runtime
//	go test -run '^$' -bench FibFloor/n=30 -benchtime 20x ./runtime
func BenchmarkFibFloor(b *testing.B) {
	for _, n := range []int{25, 30} {
		b.Run("n="+strconv.Itoa(n), func(b *testing.B) { benchFibFloor(b, n) })
	}
}

func benchFibFloor(b *testing.B, n int) {
	one, all := benchRuntime(b, 1), benchRuntime(b, 0)
	eager := benchRuntimeCfg(b, Config{promoteBackoff: -1})

	var fibFunc, fibRemember func(c *Ctx, n int) (int, error)
	fibFunc = func(c *Ctx, n int) (int, error) {
		if n < 2 {
			return n, nil
		}
		x, errX := fibFunc(c, n-1)
		y, errY := fibFunc(c, n-2)
		return x + y, firstErr(errX, errY)
	}
	var forks [maxFloorN + 1]Task // one per depth, as Jobs keeps them
	fibRemember = func(c *Ctx, n int) (int, error) {
		if n < 2 {
			return n, nil
		}
		w, t := c.w, &forks[n]
		k := w.remember(t)
		w.offer()
		x, errX := fibRemember(c, n-1)
		if !w.forget(k) {
			panic("promoted on one worker")
		}
		y, errY := fibRemember(c, n-2)
		return x + y, firstErr(errX, errY)
	}
	jobs1, jobsAll := newFibJobs(one), newFibJobs(all)

	runFibLayers(b, n, []fibLayer{
		{name: "serial", rt: one, fib: func(_ *Ctx, n int) (int, error) { return fibPlain(n), nil }, oneCPU: true},
		{name: "direct", rt: one, fib: fibDirect, oneCPU: true},
		{name: "funcval", rt: one, fib: fibFunc, oneCPU: true},
		{name: "remember", rt: one, fib: fibRemember, oneCPU: true},
		{name: "direct+remember", rt: one, fib: func(c *Ctx, n int) (int, error) { return fibDirectRemember(c, n, &forks) }, oneCPU: true},
		{name: "jobs1w", rt: one, fib: jobs1.fn, oneCPU: true},
		{name: "jobsAll", rt: all, fib: jobsAll.fn, versus: "pair"},
		{name: "jobsAllEager", rt: eager, fib: newFibJobs(eager).fn},
		{name: "closures", rt: one, fib: func(c *Ctx, n int) (int, error) { return fibClosures(c, n), nil }, oneCPU: true},
		{name: "allocs", rt: one, fib: func(c *Ctx, n int) (int, error) { return fibAllocs(n, new(Func)), nil }, oneCPU: true},
		{name: "cutoff1w", rt: one, fib: newFibCutoff(one, 12).fn, oneCPU: true},
		{name: "cutoffAll", rt: all, fib: newFibCutoff(all, 12).fn, versus: "pair"},
		{name: "pair", rt: all, fib: fibPair, work: 2},
	})
}

// fibPair runs the serial fib(n) twice at once, a copy on each worker
// when a second one takes the Join's second half (the pair layer of
// BenchmarkFibFloor).
func fibPair(c *Ctx, n int) (int, error) {
	var x, y int
	err := c.Join(
		func(*Ctx) error { x = fibPlain(n); return nil },
		func(*Ctx) error { y = fibPlain(n); return nil },
	)
	if x != y {
		return 0, fmt.Errorf("fib(%d) twice: %d and %d", n, x, y)
	}
	return x, err
}

// fibLayer is one contender of runFibLayers.
type fibLayer struct {
	name   string
	rt     *Runtime
	fib    func(c *Ctx, n int) (int, error)
	oneCPU bool // runs on one thread: its CPU time means something
	// work is how many fib(n) the layer computes (0 means 1); its times
	// are divided by it.
	work float64
	// versus names another layer to which the layer's busy time is also
	// compared, round by round (name/versus-busy).
	versus string
}

// runFibLayers runs one round of fib(n) through every layer per op, the
// first layer being the baseline, and reports the medians (see
// BenchmarkFibFloor).
func runFibLayers(b *testing.B, n int, layers []fibLayer) {
	want := fibPlain(n)
	type samples struct{ wall, ratio, cpu, busy, versus []float64 }
	s := make([]samples, len(layers))
	index := map[string]int{}
	for i, l := range layers {
		index[l.name] = i
	}
	wall, cpu, busy := make([]float64, len(layers)), make([]float64, len(layers)), make([]float64, len(layers))
	tids := map[*Runtime][]int{}
	for _, l := range layers {
		if tids[l.rt] == nil {
			tids[l.rt] = workerTIDs(b, l.rt)
		}
	}
	round := 0
	for b.Loop() {
		for k := range layers {
			i := (k + round) % len(layers)
			l := &layers[i]
			ts := tids[l.rt]
			err := onWorker(l.rt, func(c *Ctx) error {
				w0 := runQueueWaits(ts)
				c0, t0 := threadCPU(), time.Now()
				got, err := l.fib(c, n)
				wall[i], cpu[i] = float64(time.Since(t0)), float64(threadCPU()-c0)
				// The busy time: wall time less the least time any
				// worker spent preempted, runnable on the run queue.
				least := wall[i]
				for j, w := range runQueueWaits(ts) {
					least = min(least, float64(w-w0[j]))
				}
				busy[i] = wall[i] - least
				if l.work > 0 {
					wall[i], cpu[i], busy[i] = wall[i]/l.work, cpu[i]/l.work, busy[i]/l.work
				}
				if err == nil && got != want {
					b.Errorf("%s: fib(%d) = %d, want %d", l.name, n, got, want)
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		for i := range layers {
			s[i].wall = append(s[i].wall, wall[i])
			s[i].ratio = append(s[i].ratio, wall[i]/wall[0])
			s[i].cpu = append(s[i].cpu, cpu[i]/cpu[0])
			s[i].busy = append(s[i].busy, busy[i]/busy[0])
			if v, ok := index[layers[i].versus]; ok {
				s[i].versus = append(s[i].versus, busy[i]/busy[v])
			}
		}
		round++
	}
	base := layers[0].name
	for i, l := range layers {
		b.ReportMetric(median(s[i].wall), l.name+"-ns")
		if i == 0 {
			continue
		}
		b.ReportMetric(median(s[i].ratio), l.name+"/"+base)
		if l.oneCPU && layers[0].oneCPU {
			b.ReportMetric(median(s[i].cpu), l.name+"/"+base+"-cpu")
		} else {
			b.ReportMetric(median(s[i].busy), l.name+"/"+base+"-busy")
		}
		if len(s[i].versus) > 0 {
			b.ReportMetric(median(s[i].versus), l.name+"/"+l.versus+"-busy")
		}
	}
}

// workerTIDs returns the thread id of each of rt's workers, by worker id
// (a worker's goroutine is locked to its thread). It waits for its tasks
// before Group.Wait, which would otherwise run them on this goroutine's
// thread as a lent worker (onWorker).
func workerTIDs(b *testing.B, rt *Runtime) []int {
	tids := make([]int, rt.Workers())
	var seen atomic.Int32
	for seen.Load() != int32(len(tids)) {
		g := rt.Group(context.Background())
		var ran sync.WaitGroup
		ran.Add(4 * len(tids))
		for range 4 * len(tids) {
			g.Go(func(c *Ctx) error {
				defer ran.Done()
				if tids[c.Worker()] == 0 {
					tids[c.Worker()] = unix.Gettid()
					seen.Add(1)
				}
				time.Sleep(50 * time.Microsecond) // let the others take some
				return nil
			})
		}
		ran.Wait()
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
	}
	return tids
}

// onWorker runs body as a task on rt and returns its error, having waited
// for the task before calling Group.Wait: a Wait that finds the task's
// worker parked would run the task itself, as that worker, on this
// goroutine's thread (lend.go), which is not the worker's pinned thread
// and need not stay the same thread, so its thread CPU time and run-queue
// waits would not be the worker's.
func onWorker(rt *Runtime, body func(c *Ctx) error) error {
	done := make(chan struct{})
	g := rt.Go(context.Background(), func(c *Ctx) error {
		defer close(done)
		return body(c)
	})
	<-done
	return g.Wait()
}

// runQueueWaits returns, for each thread of tids, the time it has spent
// runnable but waiting for a CPU (the second field of schedstat), in
// nanoseconds; 0 where it cannot be read.
func runQueueWaits(tids []int) []int64 {
	ws := make([]int64, len(tids))
	for i, tid := range tids {
		b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(tid) + "/schedstat")
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) >= 2 {
			ws[i], _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	return ws
}

// median returns the median of v, which it sorts.
func median(v []float64) float64 {
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// threadCPU returns the calling thread's CPU time in nanoseconds; in a
// task it is the worker's (a worker's goroutine is locked to its thread).
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

func fibPlain(n int) int {
	if n < 2 {
		return n
	}
	return fibPlain(n-1) + fibPlain(n-2)
}

func fibDirect(c *Ctx, n int) (int, error) {
	if n < 2 {
		return n, nil
	}
	x, errX := fibDirect(c, n-1)
	y, errY := fibDirect(c, n-2)
	return x + y, firstErr(errX, errY)
}

// fibClosures is fib with a Ctx.Join of two closures per call.
func fibClosures(c *Ctx, n int) int {
	if n < 2 {
		return n
	}
	var x, y int
	c.Join(
		func(c *Ctx) error { x = fibClosures(c, n-1); return nil },
		func(c *Ctx) error { y = fibClosures(c, n-2); return nil },
	)
	return x + y
}

// fibAllocs is fibClosures without the runtime: each call makes the same
// two closures, and the second, stored in *sink, escapes with the
// variable it assigns, as Ctx.Join's second half does.
func fibAllocs(n int, sink *Func) int {
	if n < 2 {
		return n
	}
	var x, y int
	a := func(*Ctx) error { x = fibAllocs(n-1, sink); return nil }
	b := func(*Ctx) error { y = fibAllocs(n-2, sink); return nil }
	*sink = b
	_ = a(nil)
	_ = b(nil)
	return x + y
}

// newFibCutoff is newFibJobs with a leaf cutoff: below n = cutoff the
// body calls the serial function.
func newFibCutoff(rt *Runtime, cutoff int) *Jobs[int, int] {
	var fib *Jobs[int, int]
	fib = NewJobs(rt, func(c *Ctx, n int) (int, error) {
		if n < cutoff {
			return fibPlain(n), nil
		}
		a, b, err := fib.Join(c, n-1, n-2)
		return a + b, err
	})
	return fib
}

// maxFloorN is the largest n of BenchmarkFibFloor.
const maxFloorN = 30

func fibDirectRemember(c *Ctx, n int, forks *[maxFloorN + 1]Task) (int, error) {
	if n < 2 {
		return n, nil
	}
	w, t := c.w, &forks[n]
	k := w.remember(t)
	w.offer()
	x, errX := fibDirectRemember(c, n-1, forks)
	if !w.forget(k) {
		panic("promoted on one worker")
	}
	y, errY := fibDirectRemember(c, n-2, forks)
	return x + y, firstErr(errX, errY)
}
