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
	// (SignalTree).
	Freeze func(stop bool) error
}

// Options configures a Governor. Zero fields mean the defaults given.
type Options struct {
	// Interval is the time between samples while jobs run; 0: 100 ms, and
	// a quarter of it while less than four reserves are available.
	Interval time.Duration
	// Proc is where the job trees are read; "": "/proc".
	Proc string
	// Changed, when set, is called (without the Governor's lock) after a
	// sample that may let more jobs in: the owner admits again.
	Changed func()
	// Event, when set, is called (without the lock) for each freeze and
	// thaw, with the job, whether it froze, and why.
	Event func(id int64, froze bool, why string)
}

// Governor runs a Policy over a set of running jobs: it samples the
// Source and each job's memory while jobs run, freezes and thaws them as
// the plans say, and answers its owner's admission questions from the
// last plan ("The governor" in the package documentation). Safe for
// concurrent use.
type Governor struct {
	src  *Source
	opts Options

	mu      sync.Mutex
	pol     *Policy
	jobs    map[int64]*watched
	plan    Plan
	sample  Sample
	sampled time.Time
	err     error
	stats   Stats
	kick    chan struct{}
	// pending is the need admitted and not yet added (Admit, then Add):
	// a plan made between the two takes it from its room too.
	pending int64
}

type watched struct {
	spec    JobSpec
	started time.Time
	used    int64
	peak    int64
	frozen  bool
	oomBase int64
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
// sampling interval is made again first. The owner then calls Add.
func (g *Governor) Admit(need int64, running int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if running == 0 {
		g.pending = 0 // nothing of the owner's is admitted and not added
	}
	if running > 0 && time.Since(g.sampled) >= g.opts.Interval {
		g.sampleLocked(time.Now())
	}
	if !g.plan.Fits(need, running) {
		return false
	}
	g.plan.Take(need)
	g.pending += need
	return true
}

// Add starts watching job id. The OOM-kill count is read afresh as its
// base (Ended.OOMKills): the last sample's may be older than kills that
// have nothing to do with the job, or missing before the first sample.
func (g *Governor) Add(id int64, spec JobSpec) {
	base, err := g.src.OOMKills()
	g.mu.Lock()
	if err != nil {
		base = g.sample.OOMKills
	}
	g.jobs[id] = &watched{spec: spec, started: time.Now(), oomBase: base}
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

// SetNeed sets job id's predicted peak.
func (g *Governor) SetNeed(id int64, need int64) {
	g.mu.Lock()
	if w := g.jobs[id]; w != nil {
		w.spec.Need = need
	}
	g.mu.Unlock()
}

// Ended is what the Governor saw of a job that ended.
type Ended struct {
	// Peak is the most its processes held at one sample.
	Peak int64
	// OOMKills is the OOM-kill count when the job started: compare it
	// with OOMKilledSince to tell an OOM kill from another SIGKILL.
	OOMKills int64
	// Frozen is true when the job was frozen as it ended.
	Frozen bool
}

// Remove stops watching job id and returns what was seen of it. A job
// still frozen is continued first, so that whatever ended it can act.
func (g *Governor) Remove(id int64) Ended {
	g.mu.Lock()
	w := g.jobs[id]
	delete(g.jobs, id)
	g.mu.Unlock()
	if w == nil {
		return Ended{}
	}
	if w.frozen {
		g.freeze(w, false)
	}
	return Ended{Peak: w.peak, OOMKills: w.oomBase, Frozen: w.frozen}
}

// OOMKilledSince reports whether the kernel's OOM killer has killed a
// process since the count base (Ended.OOMKills), reading the counters
// afresh.
func (g *Governor) OOMKilledSince(base int64) bool {
	n, err := g.src.OOMKills()
	return err == nil && n > base
}

// Stats returns the counters and the last view.
func (g *Governor) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
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
		if idle {
			select {
			case <-ctx.Done():
				return
			case <-g.kick:
			}
		}
		next := g.step()
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
	plan := g.sampleLocked(time.Now())
	var freeze, thaw *watched
	if w := g.jobs[plan.Freeze]; w != nil && !w.frozen {
		freeze = w
		w.frozen = true
		g.stats.Freezes++
	}
	if w := g.jobs[plan.Thaw]; w != nil && w.frozen {
		thaw = w
		w.frozen = false
		g.stats.Thaws++
	}
	// A frozen job that is sent a signal (Ctrl-C of its build, make's
	// SIGTERM) is continued, so that the signal acts: a stopped process
	// only keeps it pending.
	var signaled []*watched
	for _, w := range g.jobs {
		if w.frozen && w != freeze && signalPending(g.opts.Proc, w.spec.Pid) {
			w.frozen = false
			g.stats.Thaws++
			signaled = append(signaled, w)
		}
	}
	next := g.opts.Interval
	if r := g.pol.Reserve(); r > 0 && g.sample.Available < 4*r {
		next = max(next/4, time.Millisecond)
	}
	g.mu.Unlock()
	if freeze != nil {
		g.freeze(freeze, true)
		g.event(plan.Freeze, true, plan.Why)
	}
	if thaw != nil {
		g.freeze(thaw, false)
		g.event(plan.Thaw, false, plan.Why)
	}
	for _, w := range signaled {
		g.freeze(w, false)
	}
	if g.opts.Changed != nil && !plan.Hold {
		g.opts.Changed()
	}
	return next
}

func (g *Governor) event(id int64, froze bool, why string) {
	if g.opts.Event != nil {
		g.opts.Event(id, froze, why)
	}
}

// sampleLocked reads the source and every job, and makes the plan.
// g.mu held.
func (g *Governor) sampleLocked(now time.Time) Plan {
	s, err := g.src.Sample()
	g.err = err
	if err != nil {
		// Keep the last plan: a file that could not be read once says
		// nothing new about memory.
		return g.plan
	}
	jobs := make([]Job, 0, len(g.jobs))
	for id, w := range g.jobs {
		if w.spec.Usage != nil {
			w.used = w.spec.Usage()
		} else if w.spec.Pid > 0 {
			w.used = TreeRSS(g.opts.Proc, w.spec.Pid)
		}
		w.peak = max(w.peak, w.used)
		jobs = append(jobs, Job{ID: id, Need: max(w.spec.Need, w.peak), Used: w.used, Started: w.started, Frozen: w.frozen})
	}
	g.sample, g.sampled = s, now
	g.plan = g.pol.Plan(now, s, jobs)
	g.plan.Take(g.pending)
	return g.plan
}

func (g *Governor) freeze(w *watched, stop bool) {
	if w.spec.Freeze != nil {
		w.spec.Freeze(stop)
		return
	}
	if w.spec.Pid > 0 {
		SignalTree(g.opts.Proc, w.spec.Pid, stop)
	}
}

// thawAll continues every frozen job.
func (g *Governor) thawAll() {
	g.mu.Lock()
	var ws []*watched
	for _, w := range g.jobs {
		if w.frozen {
			w.frozen = false
			ws = append(ws, w)
		}
	}
	g.mu.Unlock()
	for _, w := range ws {
		g.freeze(w, false)
	}
}
