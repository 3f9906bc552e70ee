package sim

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/numasteal/numasteal/farm"
)

// farmSim is one farm-level simulation: one farm size, one strategy. See
// farm.go for the model.
type farmSim struct {
	cost     FarmCost
	cpus, n  int
	strategy string
	speeds   []float64 // by host; host 0 is the client
	rng      *rand.Rand

	jobs           []kbJob
	ready          []int
	running, slots int // make's jobs and -j

	now    float64
	seq    uint64
	events farmEvents

	freeCPU   int      // the client's idle CPUs
	cpuWait   []func() // FIFO of work waiting for a client CPU
	localBusy float64
	used      []int // jobs placed per host (the client's may exceed cpus: links queue)

	upFree, downFree float64 // when each direction of the client's link is free
	upBusy           float64

	farm      *farm.Farm // numasteal's placement, hosts 1..n-1
	prio      []float64  // critical-path priority by job; nil: make's order
	origin    time.Time
	remote    int
	remWork   float64
	slowWork  float64
	remaining int
	last      float64
}

type farmEvent struct {
	t   float64
	seq uint64
	fn  func()
}

// farmEvents is a farm simulation's pending events as a container/heap
// (Len, Less, Swap, Push and Pop are heap.Interface's): earliest first,
// and events at the same time in the order they were scheduled.
type farmEvents []farmEvent

func (h farmEvents) Len() int { return len(h) }
func (h farmEvents) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}
func (h farmEvents) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *farmEvents) Push(x any)   { *h = append(*h, x.(farmEvent)) }
func (h *farmEvents) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newFarmSim(o FarmOptions, seed uint64, n int, strategy string) *farmSim {
	wl, _ := newSimWorkload("kernbench", o.CPUsPerHost, seed) // the same graph for every size
	kb := wl.(*kernbenchSim)
	e := &farmSim{
		cost: o.Cost, cpus: o.CPUsPerHost, n: n, strategy: strategy,
		speeds: hostSpeeds(n, seed, o.Cost), rng: rand.New(rand.NewPCG(seed, 0xD15CC)),
		jobs: append([]kbJob(nil), kb.jobs...), slots: o.CPUsPerHost * n,
		freeCPU: o.CPUsPerHost, used: make([]int, n), origin: time.Unix(0, 0),
	}
	e.remaining = len(e.jobs)
	for i := range e.jobs {
		if e.jobs[i].waiting == 0 {
			e.ready = append(e.ready, i)
		}
	}
	if strategy == "numasteal" {
		e.prio = criticalPaths(e.jobs)
	}
	if strings.HasPrefix(strategy, "numasteal") && n > 1 {
		var hs []farm.Host
		for i := 1; i < n; i++ {
			hs = append(hs, farm.Host{Name: "h" + strconv.Itoa(i), Port: farm.DefaultPort, Slots: e.cpus})
		}
		obj := o.Cost.SourceBytes * o.Cost.ObjectRatio
		e.farm = farm.New(hs, farm.Config{
			SendCost:     time.Duration(4 * o.Cost.LatencyNs),
			DefaultBytes: obj,
			DefaultSpeed: obj / 0.46,
		})
	}
	return e
}

// at schedules fn at virtual time t (ns).
func (e *farmSim) at(t float64, fn func()) {
	e.seq++
	heap.Push(&e.events, farmEvent{t: t, seq: e.seq, fn: fn})
}

func (e *farmSim) vtime() time.Time { return e.origin.Add(time.Duration(e.now)) }

func (e *farmSim) run() FarmStats {
	e.dispatch()
	for len(e.events) > 0 {
		ev := heap.Pop(&e.events).(farmEvent)
		e.now = ev.t
		ev.fn()
	}
	st := FarmStats{Name: e.strategy, MakespanS: e.last / 1e9, RemoteFraction: float64(e.remote) / kbCompiles}
	if e.last > 0 {
		st.LocalUtil = e.localBusy / (e.last * float64(e.cpus))
		st.UplinkUtil = e.upBusy / e.last
	}
	if e.remWork > 0 {
		st.SlowHostShare = e.slowWork / e.remWork
	}
	return st
}

// dispatch starts ready jobs while make has free job slots.
func (e *farmSim) dispatch() {
	if e.prio != nil {
		slices.SortStableFunc(e.ready, func(a, b int) int {
			switch {
			case e.prio[a] > e.prio[b]:
				return -1
			case e.prio[a] < e.prio[b]:
				return 1
			}
			return 0
		})
	}
	for e.running < e.slots && len(e.ready) > 0 {
		j := e.ready[0]
		e.ready = e.ready[1:]
		e.running++
		if j >= kbCompiles { // links stay local
			e.used[0]++
			e.runLocal(j)
			continue
		}
		h, lease := e.choose()
		e.used[h]++
		if h == 0 {
			e.runLocal(j)
		} else {
			e.runRemote(j, h, lease)
		}
	}
}

// choose picks the host of a compile under the strategy.
func (e *farmSim) choose() (int, farm.Lease) {
	switch e.strategy {
	case "numasteal", "numasteal-fifo":
		if e.used[0] < e.cpus || e.farm == nil {
			return 0, farm.Lease{}
		}
		if l, ok := e.farm.Acquire(e.vtime()); ok {
			return l.Index + 1, l
		}
	case "distcc":
		for h := range e.n {
			if e.used[h] < e.cpus {
				return h, farm.Lease{}
			}
		}
	case "random":
		var free []int
		for h := range e.n {
			if e.used[h] < e.cpus {
				free = append(free, h)
			}
		}
		if len(free) > 0 {
			return free[e.rng.IntN(len(free))], farm.Lease{}
		}
	}
	return 0, farm.Lease{}
}

// withCPU runs fn once a client CPU is free (FIFO), holding it.
func (e *farmSim) withCPU(fn func()) {
	if e.freeCPU > 0 {
		e.freeCPU--
		fn()
		return
	}
	e.cpuWait = append(e.cpuWait, fn)
}

func (e *farmSim) releaseCPU() {
	if len(e.cpuWait) > 0 {
		fn := e.cpuWait[0]
		e.cpuWait = e.cpuWait[1:]
		fn()
		return
	}
	e.freeCPU++
}

func (e *farmSim) runLocal(j int) {
	e.withCPU(func() {
		d := e.jobs[j].ns
		e.at(e.now+d, func() {
			e.localBusy += d
			e.releaseCPU()
			e.used[0]--
			e.finish(j)
		})
	})
}

// runRemote preprocesses j on a client CPU, sends it to host h, compiles
// it there and brings the object back.
func (e *farmSim) runRemote(j, h int, lease farm.Lease) {
	c := &e.cost
	work := e.jobs[j].ns
	src := c.SourceBytes * min(max(work/0.46e9, 0.1), 8)
	obj := src * c.ObjectRatio
	e.remote++
	e.remWork += work
	if e.speeds[h] < 1 {
		e.slowWork += work
	}
	e.withCPU(func() {
		pre := work * c.PreprocessFraction
		e.at(e.now+pre, func() {
			e.localBusy += pre
			e.releaseCPU()
			sent := e.now
			send := src / c.BandwidthBps * 1e9
			start := max(e.now+2*c.LatencyNs, e.upFree) // connect, then queue for the uplink
			e.upFree = start + send
			e.upBusy += send
			compiled := e.upFree + c.LatencyNs + work*(1-c.PreprocessFraction)/e.speeds[h]
			e.at(compiled, func() {
				back := max(e.now, e.downFree) + obj/c.BandwidthBps*1e9
				e.downFree = back
				e.at(back+c.LatencyNs, func() {
					e.used[h]--
					if e.farm != nil {
						e.farm.Release(lease, farm.Outcome{OK: true, Bytes: int64(obj), Elapsed: time.Duration(e.now - sent)}, e.vtime())
					}
					e.finish(j)
				})
			})
		})
	})
}

// finish completes job j: its dependents may become ready.
func (e *farmSim) finish(j int) {
	e.running--
	e.remaining--
	e.last = e.now
	for _, n := range e.jobs[j].next {
		if e.jobs[n].waiting--; e.jobs[n].waiting == 0 {
			e.ready = append(e.ready, n)
		}
	}
	e.dispatch()
}

// criticalPaths returns each job's longest path to the end of the graph,
// its own duration included (the priority buildgraph.Scheduler gives a
// task when a history knows the durations).
func criticalPaths(jobs []kbJob) []float64 {
	p := make([]float64, len(jobs))
	// Jobs only point to later jobs (compiles → links → final).
	for j := len(jobs) - 1; j >= 0; j-- {
		longest := 0.0
		for _, n := range jobs[j].next {
			longest = max(longest, p[n])
		}
		p[j] = jobs[j].ns + longest
	}
	return p
}
