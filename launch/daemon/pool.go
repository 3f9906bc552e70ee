package daemon

import (
	"os"
	"time"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/farm"
	"github.com/numasteal/numasteal/memory"
)

// job is one acquire: waiting in its build's queue, then running on a
// CPU or on a farm host. Its fields other than granted are guarded by
// Server.mu.
type job struct {
	id      int64
	build   string
	kind    string
	out     string
	cmd     string
	pid     int
	need    int64    // bytes of memory held against the budget
	learned bool     // need comes from a measurement, not a guess
	measure bool     // the launcher must wait for the command and report its peak RSS
	pidfd   *os.File // the launcher's process, for a handoff; nil: none
	remote  bool     // the launcher may run it on a farm host (acquire remote=1)
	local   bool     // a farm job run again here after distcc failed (acquire local=1)
	cpu     int      // -1 until admitted, and for a remote job
	node    int
	// peer is the launcher's pid from SO_PEERCRED: the root of the job's
	// process tree, which the memory governor watches.
	peer int
	// attempt counts the runs before this one that the kernel OOM-killed,
	// and killedAt is the peak of the last of them; shared is set when
	// another local job ran beside this one at any time (an OOM kill of a
	// job that ran alone is not retried).
	attempt  int
	killedAt int64
	shared   bool
	// ended is what the memory governor saw of the job, set by remove.
	ended memory.Ended
	// lease is the farm slot of a job running remotely; nil for a local
	// job. outcome is how it ended, from the launcher's report, for the
	// farm's Release (zero: the slot was not used, as when the launcher
	// went away without a report).
	lease   *farm.Lease
	outcome farm.Outcome
	queued  time.Time
	started time.Time
	running bool
	// granted is closed by admit when the job is given its slot, or by
	// dropBuildLocked when its build ended while it waited (dropped);
	// either then calls wake (when set) to interrupt its connection's
	// read.
	granted chan struct{}
	wake    func()
	dropped bool
}

// buildQueue is one build's waiting jobs, first come first served.
type buildQueue struct {
	id      string
	jobs    []*job
	running int
	// local counts the running jobs that hold a local slot.
	local int
	// js is the jobserver the daemon serves the build (numasteal exec;
	// jobserver.go); nil for a build that has none.
	js *jsBuild
	// served is the pool's admission count when this build last had a
	// job admitted; 0 for a build never served.
	served int64
}

// pool is the machine's slots and memory ("Admission" in the package
// documentation). Its methods are called with Server.mu held.
type pool struct {
	slots int
	// mem admits by memory, watches the running local jobs and freezes
	// them when memory runs out (package memory). memUsed is the sum of
	// the running local jobs' needs.
	mem     *memory.Governor
	memUsed int64
	// running are the running jobs, local and remote; remote counts those
	// that hold a farm lease, which take no local slot and no memory.
	running map[int64]*job
	remote  int
	// farm is the compile farm of remote jobs; nil: none. wake, when set,
	// is asked to call admit again at a time when a farm host that is
	// down comes back up while remote jobs wait: no submit or remove may
	// come before it (the local slots held by long jobs).
	farm *farm.Farm
	wake func(at time.Time)
	// builds are the builds with waiting or running jobs, in order of
	// arrival. Admission serves the least recently served build that has a
	// waiting job (round robin; a new build counts as never served, ties go
	// to the earlier). A build stays while it has running jobs, so one
	// that is served and submits again at once keeps its place.
	builds   []*buildQueue
	admitSeq int64
	// perCPU counts the running jobs on each CPU, indexed by CPU id.
	perCPU []int
	bal    balance.Balancer
	nodeOf func(cpu int) int
	nodes  *nodePlacer // moves a job to a node whose free memory covers it; nil: off
	// admitted is called (under the lock) for each admitted job.
	admitted func(*job)
	// estimate, when set, gives the need of a job whose peak is not
	// learned, when it reaches the head of its queue: what its build's
	// jobs that ended meanwhile suggest (Server.priorNeedLocked).
	estimate func(*job) int64
	// estimateBuild, when set, gives the need of a build's next compile,
	// what a token lent to its jobserver may start.
	estimateBuild func(build string) int64
}

// retryPatience bounds how long a job run again after an OOM kill waits,
// with nothing else running, for memory to come back before it runs
// alone all the same; retryPoll is how often it looks.
const (
	retryPatience = 30 * time.Second
	retryPoll     = 100 * time.Millisecond
)

// childrenOf returns the freezer of a job whose launcher is pid: the
// command's processes, not the launcher, which stays awake to continue
// them should the daemon die (launch's watchDaemon).
func childrenOf(pid int) func(stop bool) error {
	return func(stop bool) error {
		for _, c := range memory.Children("/proc", pid) {
			memory.SignalTree("/proc", c, stop)
		}
		return nil
	}
}

// Queued and Running make the pool the balance.Load the placement reads:
// a CPU with one job runs it, more are queued behind it.
func (p *pool) Queued(cpu int) int {
	if cpu < 0 || cpu >= len(p.perCPU) {
		return 0
	}
	return max(p.perCPU[cpu]-1, 0)
}

// Running reports whether cpu runs a job.
func (p *pool) Running(cpu int) bool { return cpu >= 0 && cpu < len(p.perCPU) && p.perCPU[cpu] > 0 }

// submit queues j at the tail of its build's queue, or at its head for a
// job run again after its farm run failed (it waited its turn already),
// and admits what fits.
func (p *pool) submit(j *job) {
	q := p.queue(j.build)
	if q == nil {
		q = &buildQueue{id: j.build}
		p.builds = append(p.builds, q)
	}
	if j.local {
		q.jobs = append([]*job{j}, q.jobs...)
	} else {
		q.jobs = append(q.jobs, j)
	}
	p.admit()
}

// localRunning is the number of running jobs that hold a local slot.
func (p *pool) localRunning() int { return len(p.running) - p.remote }

func (p *pool) queue(build string) *buildQueue {
	for _, b := range p.builds {
		if b.id == build {
			return b
		}
	}
	return nil
}

// forget drops q from the ring once it has nothing waiting or running
// and no jobserver.
func (p *pool) forget(q *buildQueue) {
	if len(q.jobs) > 0 || q.running > 0 || q.js != nil {
		return
	}
	for i, b := range p.builds {
		if b == q {
			p.builds = append(p.builds[:i], p.builds[i+1:]...)
			return
		}
	}
}

// remove ends j, waiting or running, and admits what now fits. Removing
// a job twice is harmless.
func (p *pool) remove(j *job) {
	q := p.queue(j.build)
	if j.running {
		j.running = false
		delete(p.running, j.id)
		if j.lease == nil {
			p.memUsed -= j.need
			j.ended = p.mem.Remove(j.id)
		}
		if j.cpu >= 0 && j.cpu < len(p.perCPU) {
			p.perCPU[j.cpu]--
		}
		if q != nil {
			q.running--
			if j.lease == nil {
				q.local--
			}
		}
		if j.lease != nil {
			p.farm.Release(*j.lease, j.outcome, time.Now())
			p.remote--
		}
	} else if q != nil {
		for k, w := range q.jobs {
			if w == j {
				q.jobs = append(q.jobs[:k], q.jobs[k+1:]...)
				break
			}
		}
	}
	if q != nil {
		p.forget(q)
	}
	p.admit()
}

// admit gives free local slots to waiting jobs and to the builds'
// jobservers that want one, round robin (taking back idle tokens others
// need first), lends tokens ahead, then gives farm slots to the waiting
// jobs that may go remote.
func (p *pool) admit() {
	held := p.admitLocal()
	if p.reclaim(held) {
		held = p.admitLocal()
	}
	if !held {
		p.lendAhead()
	}
	p.admitRemote()
}

// used is the number of local slots taken: by running local jobs, and by
// the tokens and implicit slots of jobservers that no running job of
// their build stands on yet.
func (p *pool) used() int {
	n := p.localRunning()
	for _, q := range p.builds {
		if q.js != nil {
			n += max(q.js.reserved()-q.local, 0)
		}
	}
	return n
}

// covered reports whether the next job of q may run on a slot its build
// holds already: a token of its jobserver, or the implicit slot of its
// make, that no running job of the build stands on.
func (p *pool) covered(q *buildQueue) bool {
	return q.js != nil && q.local < q.js.reserved()
}

// admitLocal gives free slots to waiting jobs: the head of each build's
// queue in turn, least recently served build first. A head whose memory
// does not fit (memory.Governor.Admit) stops admission (no job passes it,
// of its build or another), so a big job is never starved by small ones;
// when no local job runs it is admitted whatever its size, so it never
// waits forever. A job on a slot its build holds (covered) needs no free
// one. admitLocal reports whether it stopped for memory.
func (p *pool) admitLocal() (held bool) {
	p.refreshIdle()
	for {
		free := p.used() < p.slots
		var q *buildQueue
		for _, b := range p.builds {
			ok := len(b.jobs) > 0 && (free || p.covered(b)) || free && len(b.jobs) == 0 && b.js != nil && p.wants(b)
			if ok && (q == nil || b.served < q.served) {
				q = b
			}
		}
		if q == nil {
			if !free {
				p.demote()
			}
			return false
		}
		if len(q.jobs) == 0 {
			// A jobserver that holds all it has: a slot for it.
			if !p.lendOne(q) {
				return true
			}
			continue
		}
		j := q.jobs[0]
		if !j.learned && p.estimate != nil {
			j.need = p.estimate(j)
		}
		if j.attempt > 0 && p.localRunning() == 0 && time.Since(j.queued) < retryPatience && !p.mem.Free(j.killedAt) {
			// A job the kernel OOM-killed waits for memory another
			// program holds, rather than be killed again at once: until
			// what it held when it was killed is free again. Its need
			// adds a margin for running beside others; alone, the
			// margin may be more than the limit ever leaves.
			if p.wake != nil {
				p.wake(time.Now().Add(retryPoll))
			}
			return true
		}
		if !p.mem.Admit(j.need, p.localRunning()) {
			return true
		}
		// A job that runs beside others cannot tell, when the kernel
		// OOM-kills it, whether it would fit alone.
		if p.localRunning() > 0 {
			j.shared = true
			for _, r := range p.running {
				r.shared = true
			}
		}
		q.jobs = q.jobs[1:]
		q.running++
		q.local++
		p.admitSeq++
		q.served = p.admitSeq
		j.cpu = -1
		if p.bal != nil {
			j.cpu = p.bal.Place(-1, balance.PlaceExec, p)
		}
		j.cpu = p.nodes.place(p, j)
		if j.cpu >= 0 && j.cpu < len(p.perCPU) {
			p.perCPU[j.cpu]++
			j.node = p.nodeOf(j.cpu)
		}
		j.running = true
		j.started = time.Now()
		p.running[j.id] = j
		p.memUsed += j.need
		p.mem.Add(j.id, memory.JobSpec{Need: j.need, Pid: j.peer, Freeze: childrenOf(j.peer)})
		if p.admitted != nil {
			p.admitted(j)
		}
		close(j.granted)
		if j.wake != nil {
			j.wake()
		}
	}
}

// admitRemote gives farm slots to the waiting jobs that may go remote,
// after admitLocal has placed what it could: local slots first, since a
// remote job costs more (the transfer, the host's round trips). The jobs
// go in the builds' round robin, the first remote job of the least
// recently served build each time, while the farm (farm.Farm.Acquire, its
// scoring and back-off) has a host with a free slot. A remote job may
// pass a head waiting for a local slot or for memory: it takes neither.
func (p *pool) admitRemote() {
	if p.farm == nil {
		return
	}
	for {
		var q *buildQueue
		k := -1
		for _, b := range p.builds {
			if q != nil && b.served >= q.served {
				continue
			}
			for i, j := range b.jobs {
				if j.remote && !j.local {
					q, k = b, i
					break
				}
			}
		}
		if q == nil {
			return
		}
		now := time.Now()
		lease, ok := p.farm.Acquire(now)
		if !ok {
			if up, ok := p.farm.NextUp(now); ok && p.wake != nil {
				p.wake(up)
			}
			return
		}
		j := q.jobs[k]
		q.jobs = append(q.jobs[:k], q.jobs[k+1:]...)
		q.running++
		p.admitSeq++
		q.served = p.admitSeq
		j.lease = &lease
		j.cpu, j.node, j.need = -1, -1, 0
		j.running = true
		j.started = now
		p.running[j.id] = j
		p.remote++
		if p.admitted != nil {
			p.admitted(j)
		}
		close(j.granted)
		if j.wake != nil {
			j.wake()
		}
	}
}
