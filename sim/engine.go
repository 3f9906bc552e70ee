package sim

import (
	"container/heap"
	"context"
	"fmt"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/topology/domains"
)

// The simulator is discrete-event: virtual time in nanoseconds jumps from
// one event to the next. Each CPU runs one task at a time to completion
// and has a queue of ready tasks: its own code pushes at the back and takes
// the newest (a work-stealing deque) or the oldest (a run queue of
// processes); thieves take the oldest (the biggest pieces of a fork-join
// tree; the tail of Linux's cfs_tasks list). A CPU that runs
// out of work balances with its policy's Thief in NewlyIdle mode; if that
// finds nothing it polls again in Idle mode, backing off exponentially.
// Every tick each CPU that runs a task with an empty deque balances in
// Busy mode (periodic balancing). New tasks from outside (a make job, a
// script's next command) land where the policy's Place says.

// simTask is one unit of work.
type simTask struct {
	work    float64 // base work, ns
	home    int     // node holding its data; -1: where it first runs
	lastCPU int     // CPU whose cache holds its data; -1: none
	lastRan float64 // when it last ran (for cache hotness); -1: never
	kind    uint8   // workload-specific
	a, b    int32   // workload-specific
	parent  *simTask
	pending int8 // fork-join: children not yet complete
	runs    int8 // times started: must end at exactly 1
}

type simCPU struct {
	id, node int
	nodeIdx  int // position of node in simEngine.dist
	llc      int // position of the first CPU of its LLC (or core) span
	run      *simTask
	queue    []*simTask // front = oldest
	inflight []*simTask // stolen, arriving at evArrive
	waiting  bool       // idle thief waiting for its stolen tasks
	polling  bool       // an evPoll is pending
	backoff  float64
	busy     float64 // ns spent running tasks
}

const (
	evFinish uint8 = iota
	evArrive
	evPoll
	evTick
)

type simEvent struct {
	t    float64
	seq  uint64
	kind uint8
	cpu  int32
}

// eventHeap is the engine's pending events as a container/heap (Len,
// Less, Swap, Push and Pop are heap.Interface's): earliest first, and
// events at the same time in the order they were scheduled.
type eventHeap []simEvent

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(simEvent)) }
func (h *eventHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type simEngine struct {
	name    string
	cost    Cost
	wl      simWorkload
	wp      simParams
	cpus    []simCPU
	pos     []int   // CPU id -> position
	dist    [][]int // by node position
	nodePos map[int]int
	bal     balance.Balancer
	thieves []balance.Thief
	vbuf    []balance.Victim

	now    float64
	seq    uint64
	events eventHeap

	total, done   int
	base, spent   float64
	steals, rem   int
	stolen, migr  int
	pulls         int // periodic (busy) balancing moves
	remPulls      int
	lastFinish    float64
	failedSearchs int
	dups          int // tasks started more than once (a bug)
}

func newSimEngine(o Options, doms *domains.Domains, p balance.Policy) (*simEngine, error) {
	topo := o.Topology
	ids := topo.Usable.IDs()
	wl, err := newSimWorkload(o.Workload, len(ids), o.Seed)
	if err != nil {
		return nil, err
	}
	e := &simEngine{name: p.Name(), cost: o.Cost, wl: wl, wp: wl.params(), nodePos: map[int]int{}}
	e.cost.defaults(wl)
	bal, err := p.Bind(topo, doms, topo.Usable, o.Seed)
	if err != nil {
		return nil, fmt.Errorf("sim: %s: %w", p.Name(), err)
	}
	e.bal = bal
	e.pos = make([]int, topo.Usable.Last()+1)
	var nodes []int
	for i, c := range ids {
		e.pos[c] = i
		n := topo.NodeOf(c)
		if _, ok := e.nodePos[n]; !ok {
			e.nodePos[n] = len(nodes)
			nodes = append(nodes, n)
		}
		e.cpus = append(e.cpus, simCPU{id: c, node: n, nodeIdx: e.nodePos[n], llc: i})
		e.thieves = append(e.thieves, bal.Thief(c))
	}
	e.dist = make([][]int, len(nodes))
	for i, a := range nodes {
		e.dist[i] = make([]int, len(nodes))
		for j, b := range nodes {
			d := topo.Distances.Between(a, b)
			switch {
			case a == b:
				d = 10
			case d <= 10:
				d = 20 // unknown: call it one hop
			}
			e.dist[i][j] = d
		}
	}
	// LLC: the innermost domain with SD_SHARE_LLC, else the core (SMT).
	for i, c := range ids {
		if d := doms.Highest(c, domains.FlagShareLLC); d != nil {
			e.cpus[i].llc = e.pos[d.Span.First()]
		}
	}
	e.vbuf = make([]balance.Victim, 0, bal.MaxVictims())
	return e, nil
}

// Queued and Running make the engine the policies' balance.Load.
func (e *simEngine) Queued(cpu int) int { return len(e.cpus[e.pos[cpu]].queue) }

// Running reports whether cpu runs a task.
func (e *simEngine) Running(cpu int) bool { return e.cpus[e.pos[cpu]].run != nil }

func (e *simEngine) schedule(t float64, kind uint8, p int) {
	e.seq++
	heap.Push(&e.events, simEvent{t: t, seq: e.seq, kind: kind, cpu: int32(p)})
}

// distance between the nodes of two CPU positions.
func (e *simEngine) distance(p, q int) int {
	return e.dist[e.cpus[p].nodeIdx][e.cpus[q].nodeIdx]
}

func (e *simEngine) run(ctx context.Context) (PolicyStats, error) {
	e.wl.start(e)
	for p := range e.cpus { // every CPU starts idle, looking for work
		if c := &e.cpus[p]; c.run == nil && !c.waiting && !c.polling {
			c.polling = true
			e.schedule(0, evPoll, p)
		}
	}
	if e.wp.tickNs > 0 {
		e.schedule(e.wp.tickNs, evTick, 0)
	}
	for e.done < e.total && len(e.events) > 0 {
		if e.seq%(1<<16) == 0 {
			if err := ctx.Err(); err != nil {
				return PolicyStats{}, err
			}
		}
		ev := heap.Pop(&e.events).(simEvent)
		e.now = ev.t
		p := int(ev.cpu)
		switch ev.kind {
		case evFinish:
			e.finish(p)
		case evArrive:
			e.arrive(p)
		case evPoll:
			e.cpus[p].polling = false
			if e.cpus[p].run == nil && !e.cpus[p].waiting {
				e.dispatch(p, balance.Idle)
			}
		case evTick:
			e.tick()
			e.schedule(e.now+e.wp.tickNs, evTick, 0)
		}
	}
	if e.dups > 0 {
		return PolicyStats{}, fmt.Errorf("sim: %s: %d tasks ran more than once", e.name, e.dups)
	}
	if e.done < e.total {
		return PolicyStats{}, fmt.Errorf("sim: %s: %d of %d tasks ran; the rest were stranded", e.name, e.done, e.total)
	}
	st := PolicyStats{
		Name: e.name, MakespanS: e.lastFinish / 1e9,
		CrossNodeMigrations: e.migr, Steals: e.steals, RemoteSteals: e.rem,
		StolenTasks: e.stolen, TasksRun: e.done, Pulls: e.pulls, RemotePulls: e.remPulls,
	}
	if e.steals > 0 {
		st.RemoteStealFraction = float64(e.rem) / float64(e.steals)
	}
	var busy float64
	for i := range e.cpus {
		busy += e.cpus[i].busy
	}
	if e.lastFinish > 0 {
		st.Utilization = busy / (e.lastFinish * float64(len(e.cpus)))
	}
	if e.base > 0 {
		st.WorkInflation = e.spent / e.base
	}
	return st, nil
}

// addTask registers a task the workload will eventually run.
func (e *simEngine) addTask() { e.total++ }

// push puts t at the back of p's deque (a spawn by p's running task).
func (e *simEngine) push(p int, t *simTask) {
	e.cpus[p].queue = append(e.cpus[p].queue, t)
}

// place puts a task created outside the workers where the policy says,
// and starts it at once if that CPU is idle.
func (e *simEngine) place(from int, kind balance.PlaceKind, t *simTask) {
	cpu := e.bal.Place(from, kind, e)
	p := e.pos[cpu]
	e.cpus[p].queue = append(e.cpus[p].queue, t)
	if c := &e.cpus[p]; c.run == nil && !c.waiting {
		e.dispatch(p, balance.NewlyIdle)
	}
}

// dispatch gives an idle CPU work: its own deque, else a steal, else a
// later poll.
func (e *simEngine) dispatch(p int, mode balance.Mode) {
	c := &e.cpus[p]
	if n := len(c.queue); n > 0 {
		var t *simTask
		if e.wp.fifo {
			t = c.queue[0]
			c.queue = append(c.queue[:0], c.queue[1:]...)
		} else {
			t = c.queue[n-1]
			c.queue = c.queue[:n-1]
		}
		e.start(p, t)
		return
	}
	took, lat := e.balance(p, mode)
	if took {
		c.waiting = true // start resets the back-off when the tasks arrive
		e.schedule(e.now+lat, evArrive, p)
		return
	}
	if c.backoff == 0 {
		c.backoff = e.wp.pollMinNs
	} else {
		c.backoff = min(2*c.backoff, e.wp.pollMaxNs)
	}
	if !c.polling {
		c.polling = true
		e.schedule(e.now+lat+c.backoff, evPoll, p)
	}
}

// balance runs one pass of p's thief; stolen tasks go to p's inflight
// list. It returns whether something was taken and the time the pass took.
func (e *simEngine) balance(p int, mode balance.Mode) (bool, float64) {
	th := e.thieves[p]
	s := balance.Search{Mode: mode, Now: int64(e.now)}
	var lat float64
	for step := range th.Steps() {
		vs := th.Victims(e.vbuf[:0], step, e, s)
		for _, v := range vs {
			q := e.pos[v.CPU]
			if q == p {
				continue
			}
			d := float64(e.distance(p, q)) / 10
			lat += e.cost.ProbeNs * d
			vc := &e.cpus[q]
			if len(vc.queue) == 0 {
				continue
			}
			if mode == balance.Busy {
				t := vc.queue[0]
				ago := int64(-1)
				if t.lastRan >= 0 {
					ago = int64(e.now - t.lastRan)
				}
				if !th.MayMigrate(step, ago) {
					continue
				}
			}
			n := min(max(v.Max, 1), (len(vc.queue)+1)/2)
			c := &e.cpus[p]
			c.inflight = append(c.inflight, vc.queue[:n]...)
			vc.queue = append(vc.queue[:0], vc.queue[n:]...)
			th.Done(step, n, s)
			remote := vc.node != c.node
			if remote {
				e.migr += n
			}
			if mode == balance.Busy {
				e.pulls++
				if remote {
					e.remPulls++
				}
			} else {
				e.steals++
				e.stolen += n
				if remote {
					e.rem++
				}
			}
			lat += e.cost.StealNs*d + e.cost.StealPerTaskNs*d*float64(n-1)
			if mode == balance.Busy {
				e.schedule(e.now+lat, evArrive, p)
			}
			return true, lat
		}
		th.Done(step, 0, s)
	}
	e.failedSearchs++
	return false, lat
}

// arrive delivers stolen tasks; an idle thief runs the first at once.
func (e *simEngine) arrive(p int) {
	c := &e.cpus[p]
	if len(c.inflight) == 0 {
		return
	}
	if c.waiting && c.run == nil {
		first := c.inflight[0]
		// The rest go to the deque, oldest first, as StealHalf pushes them.
		c.queue = append(c.queue, c.inflight[1:]...)
		c.inflight = c.inflight[:0]
		c.waiting = false
		e.start(p, first)
		return
	}
	c.queue = append(c.queue, c.inflight...)
	c.inflight = c.inflight[:0]
	if c.run == nil && !c.waiting {
		e.dispatch(p, balance.NewlyIdle) // it went idle while they travelled
	}
}

// start runs t on p, charging the remote slow-down and cache refill.
func (e *simEngine) start(p int, t *simTask) {
	c := &e.cpus[p]
	if t.runs++; t.runs > 1 {
		e.dups++
	}
	if t.home < 0 {
		t.home = c.node
	}
	dur := t.work
	if hp, ok := e.nodePos[t.home]; ok {
		d := e.dist[c.nodeIdx][hp]
		dur *= 1 + e.cost.RemoteSlowdown*float64(d-10)/10
	}
	if t.lastCPU >= 0 && t.lastCPU != c.id {
		q := e.pos[t.lastCPU]
		switch {
		case e.cpus[q].llc == c.llc:
			dur += e.cost.RefillNs * 0.25
		default:
			dur += e.cost.RefillNs * float64(e.distance(p, q)) / 10
		}
	}
	c.run = t
	c.backoff = 0 // its next idle search starts from the shortest poll again
	c.busy += dur
	e.base += t.work
	e.spent += dur
	e.schedule(e.now+dur, evFinish, p)
}

func (e *simEngine) finish(p int) {
	c := &e.cpus[p]
	t := c.run
	c.run = nil
	t.lastCPU, t.lastRan = c.id, e.now
	e.done++
	e.lastFinish = e.now
	e.wl.finished(e, t, p)
	if c.run == nil && !c.waiting {
		e.dispatch(p, balance.NewlyIdle)
	}
}

// tick is periodic balancing: each CPU that runs a task and has an empty
// deque looks for an imbalance to pull from.
func (e *simEngine) tick() {
	for p := range e.cpus {
		c := &e.cpus[p]
		if c.run != nil && len(c.queue) == 0 && len(c.inflight) == 0 {
			e.balance(p, balance.Busy)
		}
	}
}
