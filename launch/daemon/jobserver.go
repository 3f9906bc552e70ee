package daemon

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/numasteal/numasteal/internal/procstat"
	"github.com/numasteal/numasteal/jobserver"
	"github.com/numasteal/numasteal/launch"
	"github.com/numasteal/numasteal/memory"
)

// A build started by "numasteal exec make ..." gets a jobserver from the
// daemon ("Jobserver" in the package documentation): a pipe
// (jobserver.Elastic) whose tokens are the daemon's slots. The make it
// becomes takes a token before it forks a job, so it forks only what a
// slot is free for, and the launchers it starts find their slot taken
// already: a job of the build runs at once on a token (or the make's
// implicit slot) that no running job of the build stands on yet
// (pool.covered), subject to memory like every job.
//
// The daemon lends a free slot to a build whose pipe is empty (all its
// tokens are held: it may want more), sharing the free slots between
// the builds that want; it takes idle tokens back when another build or
// a waiting launcher needs a slot, and all of them while memory holds
// admission (a token in the pipe is a fork make may do at any moment).
// A token lent is counted until the daemon reads it back: the build
// holds it, or it lies in the pipe.
//
// Lost tokens. A process that dies holding tokens (a sub-make killed
// with SIGKILL) never writes them back. Tokens are held only for jobs:
// a make holds one for each running child beyond its first, a client
// such as cargo one for each thread or child it runs beyond its own. So
// when a build holds more tokens than its launchers explain, the daemon
// counts what its process tree can hold — for every process below the
// root, its children and threads beyond the first (launchers' threads
// not counted) — and a deficit seen at two checks apart
// (lostCheckEvery) is counted back as lost: those slots return to the
// pool. Should a token counted lost come back after all, the surplus in
// the pipe is read out.

// tickJobservers is how often the daemon looks at its jobservers' pipes
// while any build has one: tokens given back, builds that want more.
const tickJobservers = 20 * time.Millisecond

// lostCheckEvery is the least time between two looks at a build's
// process tree for lost tokens.
const lostCheckEvery = 200 * time.Millisecond

// jsBuild is the jobserver of one build. Its fields are guarded by
// Server.mu.
type jsBuild struct {
	id    string // the build's name (launch.Builds.AddRoot)
	root  int    // the pid of the process it was made for (make, once it execs)
	pipe  *jobserver.Elastic
	pidfd *os.File
	// lent counts the tokens in the pipe or held by the build's
	// processes; implicit is set once a slot of the pool stands for the
	// root make's implicit slot (its first job needs no token).
	lent     int
	implicit bool
	// ahead counts the tokens of lent that stand on no slot of the pool:
	// lent while every slot is taken and the build's launchers run on all
	// it holds, so that the launchers of its next jobs have started and
	// wait, ready, when a slot frees (a launcher's start would otherwise
	// add to every job's time); or demoted from a build over its fair
	// share. A launcher on one waits for a slot like any other.
	ahead int
	// idle is the pipe's token count at the last look.
	idle int
	// recovered counts the tokens counted back after their holder died;
	// suspect is the deficit seen at the last look at the tree, at
	// checked.
	recovered int
	suspect   int
	checked   time.Time
	// peak is the most launchers of the build alive at once (waiting or
	// running).
	peak int
}

// reserved is the number of the pool's slots the build holds: its
// tokens and its implicit slot.
func (js *jsBuild) reserved() int {
	if js.implicit {
		return js.lent - js.ahead + 1
	}
	return js.lent - js.ahead
}

// forget counts n tokens of js as no longer lent, those ahead first.
func (js *jsBuild) forget(n int) {
	js.lent -= n
	js.ahead -= min(js.ahead, n)
}

// maxAhead is the most tokens lendAhead lends ahead to a build with the
// pool's slots: a quarter of them, 1 to 4.
func maxAhead(slots int) int { return min(max(slots/4, 1), 4) }

// reclaim reads idle tokens back out of the builds' pipes: all of them
// when memory holds admission (held), else when a job waits for a free
// slot or a jobserver wants one and none is free. It reports whether it
// freed a slot.
func (p *pool) reclaim(held bool) bool {
	need := held
	if !need && p.used() >= p.slots {
		for _, q := range p.builds {
			if p.waitsForSlot(q) {
				need = true
				break
			}
		}
	}
	if !need {
		return false
	}
	freed := false
	for _, q := range p.builds {
		if q.js == nil || q.js.idle == 0 {
			continue
		}
		n, _ := q.js.pipe.Reclaim(q.js.idle)
		q.js.forget(n)
		q.js.idle -= n
		freed = freed || n > 0
	}
	return freed
}

// wants reports whether the jobserver of q may use one more slot: every
// token it has is held (none lies idle in the pipe), as it looked at
// the last refresh.
func (p *pool) wants(q *buildQueue) bool {
	return q.js.idle == 0
}

// waitsForSlot reports whether q waits for a free slot of the pool: a
// job of its own that no slot of its build covers, or a jobserver with
// nothing waiting that holds all it has.
func (p *pool) waitsForSlot(q *buildQueue) bool {
	return len(q.jobs) > 0 && !p.covered(q) || q.js != nil && len(q.jobs) == 0 && p.wants(q)
}

// refreshIdle reads how many tokens lie idle in each jobserver's pipe.
func (p *pool) refreshIdle() {
	for _, q := range p.builds {
		if q.js != nil {
			if n, err := q.js.pipe.Idle(); err == nil {
				q.js.idle = n
			}
		}
	}
}

// lendOne gives q's jobserver a slot of the pool: the make's implicit
// slot first, then a token lent ahead made to stand on the slot, then a
// new token while memory has room for the build's next compile beside
// every token lent and not yet run on. It reports false when memory has
// no room.
func (p *pool) lendOne(q *buildQueue) bool {
	js := q.js
	switch {
	case !js.implicit:
		js.implicit = true
	case js.ahead > 0:
		js.ahead--
	case !p.tokenFits(q) || js.pipe.Lend(1) != nil:
		return false
	default:
		js.lent++
		js.idle++
		// More at once while nobody else waits for the free slots, so
		// that a make starts its first jobs together, not one a tick.
		for n := p.lendBurst(q); n > 1 && p.tokenFits(q) && js.pipe.Lend(1) == nil; n-- {
			js.lent++
			js.idle++
		}
	}
	p.admitSeq++
	q.served = p.admitSeq
	return true
}

// lendBurst is how many tokens q's jobserver may be lent at once: the
// free slots shared between the builds that wait for one (q among them).
func (p *pool) lendBurst(q *buildQueue) int {
	waiting := 1
	for _, b := range p.builds {
		if b != q && p.waitsForSlot(b) {
			waiting++
		}
	}
	return (p.slots - p.used() + 1) / waiting
}

// lendAhead lends, with no slot free, a token ahead to each jobserver
// that wants one and whose launchers run on every slot it holds, up to
// maxAhead. A job that is no launcher (cp, a script) would run on it at
// once, beyond the slots: hence only while launchers fill the build's.
func (p *pool) lendAhead() {
	if p.used() < p.slots {
		return
	}
	for _, q := range p.builds {
		js := q.js
		if js == nil || !js.implicit || !p.wants(q) || q.local < js.reserved() || js.ahead >= maxAhead(p.slots) {
			continue
		}
		if js.pipe.Lend(1) == nil {
			js.lent++
			js.ahead++
			js.idle++
		}
	}
}

// demote keeps the slots fair when every one is taken and a build waits
// for one (a waiting job of its own, or a jobserver holding all it has):
// a jobserver build holding more than its share (the slots over the
// builds that run or wait) has its tokens beyond the share counted as
// lent ahead. Its make keeps them, but its next launchers wait for a
// slot in the round robin like anyone's.
func (p *pool) demote() {
	waiting, active := false, 0
	for _, q := range p.builds {
		starved := p.waitsForSlot(q)
		waiting = waiting || starved
		if starved || q.running > 0 {
			active++
		}
	}
	if !waiting || active < 2 {
		return
	}
	share := (p.slots + active - 1) / active
	for _, q := range p.builds {
		if js := q.js; js != nil && js.reserved() > share {
			js.ahead += min(js.reserved()-share, js.lent-js.ahead)
		}
	}
}

// tokenFits reports whether memory has room for one more job of q's
// build beside what the tokens lent and not yet run on may start: each
// such token counts the need of its build's next compile.
func (p *pool) tokenFits(q *buildQueue) bool {
	if p.estimateBuild == nil {
		return true
	}
	room := p.mem.Room()
	if room == memory.Unlimited {
		return true
	}
	for _, b := range p.builds {
		if b.js != nil {
			room -= int64(max(b.js.reserved()-b.local, 0)) * p.estimateBuild(b.id)
		}
	}
	return room >= p.estimateBuild(q.id)
}

// refreshJobserversLocked reads each jobserver's idle tokens, reads out
// a surplus, counts lost tokens back, and admits again. s.mu held.
func (s *Server) refreshJobserversLocked(now time.Time) {
	s.pool.refreshIdle()
	for _, q := range s.pool.builds {
		js := q.js
		if js == nil {
			continue
		}
		if js.idle > js.lent {
			// Tokens counted lost came back: read out the surplus.
			n, _ := js.pipe.Reclaim(js.idle - js.lent)
			js.idle -= n
		}
		js.peak = max(js.peak, q.running+len(q.jobs))
		s.checkLostLocked(q, now)
	}
	s.pool.admit()
}

// checkLostLocked counts back the tokens q's build lost ("Lost tokens"
// above). s.mu held.
func (s *Server) checkLostLocked(q *buildQueue, now time.Time) {
	js := q.js
	held := js.lent - js.idle
	// One launcher may run on the implicit slot.
	launchers := max(q.running+len(q.jobs)-1, 0)
	if held <= launchers {
		js.suspect = 0
		return
	}
	if now.Sub(js.checked) < lostCheckEvery {
		return
	}
	js.checked = now
	var skip []int
	for _, j := range s.pool.running {
		if j.build == js.id {
			skip = append(skip, j.peer)
		}
	}
	for _, j := range q.jobs {
		skip = append(skip, j.peer)
	}
	deficit := held - max(holdable("/proc", js.root, skip), launchers)
	if deficit <= 0 {
		js.suspect = 0
		return
	}
	if js.suspect == 0 {
		js.suspect = deficit
		return
	}
	n := min(deficit, js.suspect)
	js.suspect = 0
	js.forget(n)
	js.recovered += n
	fmt.Fprintf(s.cfg.Log, "numasteal serve: build %s: %d jobserver tokens lost (their holder died), counted back\n", js.id, n)
}

// holdable returns how many jobserver tokens the process tree of root
// can hold: for each process below root, its children and its threads
// beyond the first; threads of the processes in launchers (numasteal's
// own, which hold no token) not counted.
func holdable(proc string, root int, launchers []int) int {
	n := 0
	for _, pid := range memory.Tree(proc, root) {
		k := len(memory.Children(proc, pid))
		if !slices.Contains(launchers, pid) {
			k += threads(proc, pid) - 1
		}
		n += max(k-1, 0)
	}
	return n
}

// threads returns the thread count of pid (1 when it cannot be read).
func threads(proc string, pid int) int {
	var buf [512]byte
	b, err := procstat.Read(proc, pid, buf[:])
	if err != nil {
		return 1
	}
	st, err := procstat.Parse(b)
	if err != nil {
		return 1
	}
	n, err := st.Int(20)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// errNoPidfd: the kernel cannot tell the daemon when a build ends.
var errNoPidfd = errors.New("this kernel has no pidfd_open (Linux 5.3): the daemon could not tell when the build ends")

// startJobserver makes the jobserver of the build whose root is process
// pid (the numasteal exec that asks, about to exec name), and returns it
// with the descriptors to hand to pid. The build ends when pid does.
func (s *Server) startJobserver(pid int, name string) (js *jsBuild, r, w *os.File, err error) {
	pidfd := openPidfd(pid)
	if pidfd == nil {
		return nil, nil, nil, errNoPidfd
	}
	id, ok := s.builds.AddRoot(pid, name)
	if !ok {
		pidfd.Close()
		return nil, nil, nil, fmt.Errorf("process %d is gone", pid)
	}
	pipe, err := jobserver.NewElastic()
	if err == nil {
		r, w, err = pipe.Export()
		if err != nil {
			pipe.Close()
		}
	}
	if err != nil {
		s.builds.RemoveRoot(id)
		pidfd.Close()
		return nil, nil, nil, err
	}
	js = &jsBuild{id: id, root: pid, pipe: pipe, pidfd: pidfd}
	s.mu.Lock()
	q := s.pool.queue(id)
	if q == nil {
		q = &buildQueue{id: id}
		s.pool.builds = append(s.pool.builds, q)
	}
	q.js = js
	s.active++
	if !s.jsTicking {
		s.jsTicking = true
		s.watchers.Add(1)
		go s.tickJobservers()
	}
	s.pool.admit()
	s.mu.Unlock()
	s.watchers.Add(1)
	go func() {
		defer s.watchers.Done()
		waitExit(pidfd)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.endJobserverLocked(q, js)
	}()
	return js, r, w, nil
}

// endJobserverLocked ends the jobserver js of q, whose root ended (or the
// daemon shuts down): its slots return to the pool, its waiting jobs are
// dropped. Ending one twice is harmless. s.mu held.
func (s *Server) endJobserverLocked(q *buildQueue, js *jsBuild) {
	if q.js != js {
		return
	}
	q.js = nil
	js.pipe.Close()
	js.pidfd.Close()
	s.builds.RemoveRoot(js.id)
	fmt.Fprintf(s.cfg.Log, "numasteal serve: build %s ended: its jobserver had %d tokens lent, %d counted back lost; at most %d launchers at once\n",
		js.id, js.lent, js.recovered, js.peak)
	s.dropBuildLocked(js.id, js.root)
	s.pool.forget(q)
	s.active--
	s.idleLocked()
	s.pool.admit()
}

// endJobserversLocked ends every jobserver (at shutdown). s.mu held.
func (s *Server) endJobserversLocked() {
	for _, q := range slices.Clone(s.pool.builds) {
		if q.js != nil {
			s.endJobserverLocked(q, q.js)
		}
	}
}

// tickJobservers refreshes the jobservers every tickJobservers while any
// build has one.
func (s *Server) tickJobservers() {
	defer s.watchers.Done()
	t := time.NewTicker(tickJobservers)
	defer t.Stop()
	for now := range t.C {
		s.mu.Lock()
		any := false
		for _, q := range s.pool.builds {
			any = any || q.js != nil
		}
		if !any || s.closing {
			s.jsTicking = false
			s.mu.Unlock()
			return
		}
		s.refreshJobserversLocked(now)
		s.mu.Unlock()
	}
}

// jobserverReply is the reply to "jobserver": the build's name and the
// slots, to write into MAKEFLAGS as -jN.
func (s *Server) jobserverReply(js *jsBuild) launch.Msg {
	return launch.NewMsg("jobserver", "build", js.id, "slots", strconv.Itoa(s.pool.slots))
}
