package memory

import (
	"context"
	"sync"
	"time"
)

// JobSpec says how the Governor watches one job.
type JobSpec struct {
	// Need is the job's predicted peak, in bytes.
	Need int64
	// Pid is the root of the job's process tree (the launcher, or the
	// compiler it handed off to); 0 until known (SetPid).
	Pid int
	// Usage, when set, reads the job's memory now (a cgroup's
	// memory.current); nil: the resident memory of Pid's tree (TreeRSS).
	Usage func() int64
	// Freeze, when set, stops (true) or continues (false) every process of
	// the job (a cgroup freezer); nil: SIGSTOP and SIGCONT to Pid's tree
	// (SignalTree). It must not call the Governor.
	Freeze func(stop bool) error
	// Fixed jobs are never frozen (SetFixed).
	Fixed bool
}

// Options configures a Governor. Zero fields mean the defaults given.
type Options struct {
	// Interval is the time between samples while jobs run and memory
	// is short; 0: 100 ms. A quarter of it while less than four reserves
	// are available; up to ten times it while the memory available would
	// last that long at the fastest rate memory is taken (intervalLocked).
	Interval time.Duration
	// Proc is where the job trees are read; "": "/proc".
	Proc string
	// Changed, when set, is called (without the Governor's lock) after a
	// sample that may let more jobs in: the owner admits again. Event,
	// when set, is called likewise for each freeze and thaw, with the job,
	// whether it froze, and why. Both are called from Run's goroutine
	// only, never from a method the owner calls, so they may take the
	// owner's lock that the owner holds around Admit, Add and Remove.
	Changed func()
	Event   func(id int64, froze bool, why string)
}

// Governor runs a Policy over a set of running jobs: it samples the
// Source and each job's memory while jobs run, freezes and thaws them as
// the plans say, and answers its owner's admission questions from the
// last plan ("The governor" in the package documentation). Safe for
// concurrent use.
type Governor struct {
	src  *Source
	opts Options

	// moving is held while freezes and thaws are carried out, from the
	// decision under mu (taken before mu is let go) to the last signal,
	// so that Remove's and thawAll's continues come after a stop decided
	// before them, never before it. Order: mu, then moving.
	moving sync.Mutex

	mu      sync.Mutex
	pol     *Policy
	jobs    map[int64]*watched
	plan    Plan
	sample  Sample
	sampled time.Time
	err     error
	stats   Stats
	kick    chan struct{}
	seq     int64 // the last watched.seq given
	// told are the moves Admit carried out whose events Run has yet to
	// report: the owner calls Admit under its own lock, which its Event
	// callback may take, so Admit never calls back.
	told []moves
	// pending is the need admitted and not yet added (Admit, then Add):
	// a plan made between the two takes it from its room too.
	pending int64
}

type watched struct {
	// seq is the job's id in the Policy's plans: the owner's ids may be
	// anything, 0 included, which a Plan uses for "no job".
	seq     int64
	spec    JobSpec
	started time.Time
	used    int64
	peak    int64
	frozen  bool
	// ending: the job was frozen and sent a signal, and was continued
	// for it to act. It is left to end: never frozen again, and not in
	// the Policy's plans.
	ending  bool
	oomBase int64
	avail   int64
}

// Stats are a Governor's counters and its last view, for status pages and
// metrics.
type Stats struct {
	// Sample is the last sample; Reserve and Budget the thresholds in
	// force (Budget 0: none).
	Sample          Sample
	Reserve, Budget int64
	// Some and Full are the recent memory stall shares, in percent.
	Some, Full float64
	// Used is what the running jobs hold; Jobs how many run; Frozen how
	// many of them are frozen.
	Used         int64
	Jobs, Frozen int
	// Holding is the reason admission holds, "" when it does not.
	Holding string
	// Freezes and Thaws count the freezes and thaws so far.
	Freezes, Thaws int64
	// Err is the last sampling error, nil when the last sample worked.
	Err error
}

// NewGovernor returns a Governor of src with thresholds t. Run must run
// for it to sample.
func NewGovernor(src *Source, t Thresholds, o Options) *Governor {
	if o.Interval <= 0 {
		o.Interval = 100 * time.Millisecond
	}
	if o.Proc == "" {
		o.Proc = "/proc"
	}
	return &Governor{src: src, opts: o, pol: NewPolicy(t), jobs: make(map[int64]*watched),
		kick: make(chan struct{}, 1), plan: Plan{Room: Unlimited}}
}

// Admit reports whether a job of need may start now, with running jobs
// of the owner running (Plan.Fits), and when it may, takes its need from
// the room so that the next question sees it. A plan older than the
// sampling interval (Options.Interval, as stretched or shortened by the
// memory left) is made again first, and its freeze or thaw carried out.
// The owner then calls Add.
func (g *Governor) Admit(need int64, running int) bool {
	g.mu.Lock()
	var m moves
	if running == 0 {
		g.pending = 0 // nothing of the owner's is admitted and not added
	}
	if time.Since(g.sampled) >= g.intervalLocked() {
		m = g.decideLocked(time.Now())
	}
	ok := g.plan.Fits(need, running)
	if ok {
		g.plan.Take(need)
	}
	if ok {
		g.pending += need
	}
	if m.freeze != nil || m.thaw != nil {
		g.told = append(g.told, m)
	}
	g.moving.Lock()
	g.mu.Unlock()
	g.apply(m, false)
	if m.freeze != nil || m.thaw != nil {
		select {
		case g.kick <- struct{}{}:
		default:
		}
	}
	return ok
}

// Add starts watching job id, any number the owner gives its jobs (0
// included) that no other watched job has. The base of the job's
// Ended.OOMKills is the OOM-kill count of the last sample when that is
// younger than the sampling interval in force (stretched while much
// memory is free, when no OOM kill is near), else the counters read
// afresh: a run of short jobs reads them once an interval, not once a
// job.
func (g *Governor) Add(id int64, spec JobSpec) {
	g.mu.Lock()
	base, fresh := g.sample.OOMKills, time.Since(g.sampled) < g.intervalLocked()
	g.mu.Unlock()
	if !fresh {
		if n, err := g.src.OOMKills(); err == nil {
			base = n
		}
	}
	g.mu.Lock()
	g.seq++
	g.jobs[id] = &watched{seq: g.seq, spec: spec, started: time.Now(), oomBase: base, avail: g.sample.Available}
	g.pending = max(g.pending-spec.Need, 0)
	g.mu.Unlock()
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// SetPid sets the root process of job id's tree, once it is known.
func (g *Governor) SetPid(id int64, pid int) {
	g.mu.Lock()
	if w := g.jobs[id]; w != nil {
		w.spec.Pid = pid
	}
	g.mu.Unlock()
}

// SetFixed makes job id one the Governor never freezes: a job whose
// processes nobody could continue should the owner die (a compiler the
// launcher handed off to). A job frozen already is continued.
func (g *Governor) SetFixed(id int64) {
	g.mu.Lock()
	w := g.jobs[id]
	thaw := w != nil && w.frozen
	var spec JobSpec
	if w != nil {
		w.spec.Fixed, w.frozen = true, false
		spec = w.spec
	}
	g.mu.Unlock()
	if thaw {
		g.moving.Lock()
		g.freeze(spec, false)
		g.moving.Unlock()
	}
}

// Ended is what the Governor saw of a job that ended.
type Ended struct {
	// Peak is the most its processes held at one sample.
	Peak int64
	// OOMKills is the OOM-kill count when the job started (at most a
	// sampling interval before: Add): compare it with OOMKilledSince to
	// tell an OOM kill from another SIGKILL.
	OOMKills int64
	// Frozen is true when the job was frozen as it ended.
	Frozen bool
	// Available is the memory available (Sample.Available) at the last
	// sample before the job started: what it could count on alone.
	Available int64
}

// Remove stops watching job id and returns what was seen of it. A job
// still frozen is continued first, so that whatever ended it can act.
func (g *Governor) Remove(id int64) Ended {
	g.mu.Lock()
	w := g.jobs[id]
	delete(g.jobs, id)
	if w != nil && g.plan.Room != Unlimited {
		// The plan counted what the job held and was expected to grow
		// by; it gives both back until the next sample says more. A
		// sample per job would cost a short task more than its run.
		g.plan.Room += max(w.spec.Need, w.peak, w.used)
	}
	var e Ended
	var spec JobSpec
	if w != nil {
		e, spec = Ended{Peak: w.peak, OOMKills: w.oomBase, Frozen: w.frozen, Available: w.avail}, w.spec
	}
	g.mu.Unlock()
	if e.Frozen {
		g.moving.Lock()
		g.freeze(spec, false)
		g.moving.Unlock()
	}
	return e
}

// OOMKilledSince reports whether the kernel's OOM killer has killed a
// process since the count base (Ended.OOMKills), reading the counters
// afresh.
func (g *Governor) OOMKilledSince(base int64) bool {
	n, err := g.src.OOMKills()
	return err == nil && n > base
}

// Stats returns the counters and the last view. An idle Governor (no
// job watched) does not sample on its own, so Stats reads its view afresh
// when it is older than the sampling interval: the limit and the memory
// available show before the first job and after the last.
func (g *Governor) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now := time.Now(); len(g.jobs) == 0 && now.Sub(g.sample.At) >= g.opts.Interval {
		g.sampleLocked(now)
	}
	st := g.stats
	st.Sample = g.sample
	st.Reserve, st.Budget = g.pol.Reserve(), g.pol.Budget()
	st.Some, st.Full = g.pol.Pressure()
	st.Jobs = len(g.jobs)
	for _, w := range g.jobs {
		st.Used += w.used
		if w.frozen {
			st.Frozen++
		}
	}
	if g.plan.Hold {
		st.Holding = g.plan.Why
	}
	st.Err = g.err
	return st
}

// Run samples while jobs run, until ctx is done; then it continues every
// job it froze and returns.
func (g *Governor) Run(ctx context.Context) {
	defer g.thawAll()
	t := time.NewTimer(g.opts.Interval)
	defer t.Stop()
	for {
		g.mu.Lock()
		idle := len(g.jobs) == 0
		g.mu.Unlock()
		var next time.Duration
		if idle {
			select {
			case <-ctx.Done():
				return
			case <-g.kick:
			}
			// The job that ended the idle time was admitted on a sample
			// younger than the interval (Admit makes one when the last
			// is older): the next is due when the interval is up. A run
			// of short jobs, each after an idle moment, then samples
			// once an interval, not once a job.
			next = g.untilDue()
		}
		if next <= 0 {
			next = g.step()
		}
		t.Reset(next)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// step takes one sample, acts on its plan and returns the time to the
// next.
func (g *Governor) step() time.Duration {
	g.mu.Lock()
	told := g.told
	g.told = nil
	m := g.decideLocked(time.Now())
	next := g.intervalLocked()
	g.moving.Lock()
	g.mu.Unlock()
	g.apply(m, true)
	for _, t := range told {
		g.report(t)
	}
	if g.opts.Changed != nil && !m.plan.Hold {
		g.opts.Changed()
	}
	return next
}

// fillRate is the fastest memory is taken, in bytes a second: earlyoom's
// figure (6000 MiB/s, "stress -m 4"), by which it, too, samples less often
// when much memory is free.
const fillRate = 6000 << 20

// intervalLocked is the time between samples: a quarter of
// Options.Interval while less than four reserves are available;
// Options.Interval while admission holds or a job is frozen; otherwise
// the time the memory available beyond the reserve would last at
// fillRate, at least Options.Interval and at most ten times it. g.mu
// held.
func (g *Governor) intervalLocked() time.Duration {
	r := g.pol.Reserve()
	if r > 0 && g.sample.Available < 4*r {
		return max(g.opts.Interval/4, time.Millisecond)
	}
	if g.plan.Hold {
		return g.opts.Interval
	}
	for _, w := range g.jobs {
		if w.frozen {
			return g.opts.Interval
		}
	}
	last := time.Duration(float64(g.sample.Available-r) / fillRate * float64(time.Second))
	return min(max(last, g.opts.Interval), 10*g.opts.Interval)
}

// untilDue returns the time until the next sample is due, 0 when it is
// due now or Admit has moves to report.
func (g *Governor) untilDue() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.told) > 0 || g.sampled.IsZero() {
		return 0
	}
	return max(g.intervalLocked()-time.Since(g.sampled), 0)
}

// treeSignaled reports whether a process of pid's tree has a signal
// pending (signalPending): the job's command, frozen while its launcher
// (the tree's root) stays awake, is the one that has it.
func treeSignaled(proc string, pid int) bool {
	for _, p := range Tree(proc, pid) {
		if signalPending(proc, p) {
			return true
		}
	}
	return false
}

// moves are what a plan asks of the jobs, decided under g.mu and carried
// out (apply) after it: the job to freeze, the job to thaw, and the
// frozen jobs that were sent a signal, each with its id and spec as they
// were.
type moves struct {
	plan             Plan
	freeze, thaw     *JobSpec
	freezeID, thawID int64
	signaled         []JobSpec
}

// decideLocked takes a sample, makes the plan and marks the jobs it
// freezes and thaws. A sample that fails moves nothing. g.mu held.
func (g *Governor) decideLocked(now time.Time) moves {
	plan, fresh := g.sampleLocked(now)
	m := moves{plan: plan}
	for id, w := range g.jobs {
		switch {
		case !fresh:
		case plan.Freeze != 0 && w.seq == plan.Freeze && !w.frozen:
			spec := w.spec
			m.freeze, m.freezeID = &spec, id
			w.frozen = true
			g.stats.Freezes++
		case plan.Thaw != 0 && w.seq == plan.Thaw && w.frozen:
			spec := w.spec
			m.thaw, m.thawID = &spec, id
			w.frozen = false
			g.stats.Thaws++
		}
	}
	// A frozen job that is sent a signal (Ctrl-C of its build, make's
	// SIGTERM) is continued, so that the signal acts: a stopped process
	// only keeps it pending.
	for id, w := range g.jobs {
		if w.frozen && id != m.freezeID && treeSignaled(g.opts.Proc, w.spec.Pid) {
			w.frozen, w.ending = false, true
			g.stats.Thaws++
			m.signaled = append(m.signaled, w.spec)
		}
	}
	return m
}

// apply carries out the moves decided, called with g.moving held and
// g.mu not; it lets g.moving go before it reports the moves (when
// report; Run reports those of Admit), so that an Event callback may call
// the Governor.
func (g *Governor) apply(m moves, report bool) {
	if m.freeze != nil {
		g.freeze(*m.freeze, true)
	}
	if m.thaw != nil {
		g.freeze(*m.thaw, false)
	}
	for _, spec := range m.signaled {
		g.freeze(spec, false)
	}
	g.moving.Unlock()
	if report {
		g.report(m)
	}
}

// report tells the owner of the moves m made (Options.Event).
func (g *Governor) report(m moves) {
	if m.freeze != nil {
		g.event(m.freezeID, true, m.plan.Why)
	}
	if m.thaw != nil {
		g.event(m.thawID, false, m.plan.Why)
	}
}

func (g *Governor) event(id int64, froze bool, why string) {
	if g.opts.Event != nil {
		g.opts.Event(id, froze, why)
	}
}

// sampleLocked reads the source and every job, and makes the plan;
// fresh is false when the sample failed and the plan is the last one.
// g.mu held.
func (g *Governor) sampleLocked(now time.Time) (plan Plan, fresh bool) {
	s, err := g.src.Sample()
	g.err = err
	if err != nil {
		// Keep the last plan: a file that could not be read once says
		// nothing new about memory.
		return g.plan, false
	}
	jobs := make([]Job, 0, len(g.jobs))
	for _, w := range g.jobs {
		if w.spec.Usage != nil {
			w.used = w.spec.Usage()
		} else if w.spec.Pid > 0 {
			w.used = TreeRSS(g.opts.Proc, w.spec.Pid)
		}
		w.peak = max(w.peak, w.used)
		if w.ending {
			continue
		}
		jobs = append(jobs, Job{ID: w.seq, Need: max(w.spec.Need, w.peak), Used: w.used, Started: w.started, Frozen: w.frozen, Fixed: w.spec.Fixed})
	}
	g.sample, g.sampled = s, now
	g.plan = g.pol.Plan(now, s, jobs)
	g.plan.Take(g.pending)
	return g.plan, true
}

func (g *Governor) freeze(spec JobSpec, stop bool) {
	if spec.Freeze != nil {
		spec.Freeze(stop)
		return
	}
	if spec.Pid > 0 {
		SignalTree(g.opts.Proc, spec.Pid, stop)
	}
}

// thawAll continues every frozen job.
func (g *Governor) thawAll() {
	g.mu.Lock()
	var specs []JobSpec
	for _, w := range g.jobs {
		if w.frozen {
			w.frozen = false
			specs = append(specs, w.spec)
		}
	}
	g.mu.Unlock()
	g.moving.Lock()
	defer g.moving.Unlock()
	for _, spec := range specs {
		g.freeze(spec, false)
	}
}

// Free reports whether need fits what is available now beyond the
// reserve, from a fresh sample: for a job that should not start alone
// into memory another program holds (one the kernel OOM-killed).
func (g *Governor) Free(need int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sampleLocked(time.Now())
	return g.err != nil || need <= g.sample.Available-g.pol.Reserve()
}

// Room returns the room left in the last plan, after the needs of the
// jobs admitted since (Unlimited when nothing bounds it).
func (g *Governor) Room() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.plan.Room
}

// Peak returns the most job id's processes have held at one sample so
// far; 0 for a job not watched.
func (g *Governor) Peak(id int64) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w := g.jobs[id]; w != nil {
		return w.peak
	}
	return 0
}
