package memory

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Job is a running job as the Policy sees it.
type Job struct {
	ID int64
	// Need is the most the job is expected to hold: its predicted peak,
	// or what it has held already when that is more.
	Need int64
	// Used is what its processes hold now.
	Used int64
	// Started orders the jobs (then ID, for jobs started at the same
	// time): the newest is frozen first, the oldest thawed first.
	Started time.Time
	Frozen  bool
	// Fixed jobs are never frozen (a job whose processes the owner cannot
	// continue should it die).
	Fixed bool
}

// Thresholds of a Policy. Zero fields mean the defaults given.
type Thresholds struct {
	// Budget bounds what the running jobs hold or are expected to hold
	// together (numasteal serve --mem, numasteal run --mem), in bytes;
	// 0: only what the machine and the cgroups allow.
	Budget int64
	// Reserve is kept free of jobs: memory for everything else, and the
	// slack that absorbs the growth of jobs between two samples. 0: a
	// sixteenth of the tighter of the cgroup limit and the memory
	// available at the first sample, within [32 MiB, 512 MiB].
	Reserve int64
	// HoldPressure is the memory PSI "some" share, in percent, at or
	// above which nothing is admitted; 0: 10 (Buck2's default threshold).
	HoldPressure float64
	// FreezePressure is the PSI "full" share, in percent, at or above
	// which the newest running job is frozen; 0: 20 (a third of
	// systemd-oomd's default kill threshold, since freezing is undone).
	FreezePressure float64
	// Settle is how long after a freeze or a thaw the next one waits,
	// unless memory runs out (Available below half the reserve); 0:
	// 500 ms, a few samples for the pressure and the jobs to show the
	// change.
	Settle time.Duration
}

// Plan is what the Policy makes of one sample.
type Plan struct {
	// Room is the memory a job admitted now may be expected to take:
	// Unlimited when nothing bounds it. Admit a job when it fits (Fits),
	// and take its need from Room (Take) before the next.
	Room int64
	// Hold: admit nothing now. Why says why.
	Hold bool
	// Freeze and Thaw name a job to freeze or to thaw now; 0: none.
	Freeze, Thaw int64
	// Why explains Hold, Freeze and Thaw, in a few words for logs and
	// status ("memory 52 MiB below the reserve", "pressure full 31%").
	Why string
}

// Fits reports whether a job of need may be admitted under p while
// running jobs run: always when none runs (a job too big for the room
// runs alone rather than never), else when p does not hold and need fits
// the room.
func (p *Plan) Fits(need int64, running int) bool {
	if running == 0 {
		return true
	}
	return !p.Hold && need <= p.Room
}

// Take takes need from the room, for the admission of a job.
func (p *Plan) Take(need int64) {
	if p.Room != Unlimited {
		p.Room -= need
	}
}

// Policy turns samples into plans: how much a new job may take, which
// job to freeze when memory runs out, which to thaw when it comes back
// ("The policy" in the package documentation). It keeps the little state
// that needs: the previous sample's stall totals, for a pressure more
// recent than PSI's ten-second average, and the time of the last freeze
// or thaw. Not safe for concurrent use.
type Policy struct {
	t        Thresholds
	last     Sample
	lastAt   time.Time
	some     float64 // recent stall shares, percent (decaying averages over about a second)
	full     float64
	lastMove time.Time
}

// NewPolicy returns a Policy with thresholds t.
func NewPolicy(t Thresholds) *Policy {
	if t.HoldPressure <= 0 {
		t.HoldPressure = 10
	}
	if t.FreezePressure <= 0 {
		t.FreezePressure = 20
	}
	if t.Settle <= 0 {
		t.Settle = 500 * time.Millisecond
	}
	return &Policy{t: t}
}

// Reserve returns the reserve in force (zero before the first plan when
// it is derived from the sample).
func (p *Policy) Reserve() int64 { return p.t.Reserve }

// Budget returns the budget (0: none).
func (p *Policy) Budget() int64 { return p.t.Budget }

// Pressure returns the recent stall shares, in percent, that the last
// plan saw: "some" and "full" over about the last second.
func (p *Policy) Pressure() (some, full float64) { return p.some, p.full }

// Plan makes the plan for sample s taken at now, with jobs running (in
// any order).
func (p *Policy) Plan(now time.Time, s Sample, jobs []Job) Plan {
	if p.t.Reserve <= 0 {
		base := s.Available
		if s.Limit > 0 {
			base = min(base, s.Limit)
		}
		p.t.Reserve = min(max(base/16, 32<<20), 512<<20)
	}
	p.pressure(now, s)
	reserve := p.t.Reserve

	var active, frozen []Job
	var growth, held int64
	for _, j := range jobs {
		need := max(j.Need, j.Used)
		held += need
		if j.Frozen {
			frozen = append(frozen, j)
			continue
		}
		active = append(active, j)
		growth += need - j.Used
	}
	slices.SortFunc(active, byStart)
	slices.SortFunc(frozen, byStart)

	var plan Plan
	free := s.Available - reserve - growth
	plan.Room = Unlimited
	if s.Available > 0 || s.Limit > 0 {
		plan.Room = free
	}
	if p.t.Budget > 0 {
		plan.Room = min(plan.Room, p.t.Budget-held)
	}

	short := s.Available < reserve
	emergency := s.Available < reserve/2
	// The running jobs are expected to outgrow what is left: without swap
	// a frozen job gives nothing back, so the newest must stop before
	// memory is short, while the older ones can still finish.
	over := free < 0
	stalled := p.full >= p.t.FreezePressure
	settled := now.Sub(p.lastMove) >= p.t.Settle
	switch {
	case short:
		plan.Hold, plan.Why = true, fmt.Sprintf("available memory %d MiB is below the reserve of %d MiB", s.Available>>20, reserve>>20)
	case p.some >= p.t.HoldPressure:
		plan.Hold, plan.Why = true, fmt.Sprintf("memory pressure some %.0f%%", p.some)
	case len(frozen) > 0:
		plan.Hold, plan.Why = true, fmt.Sprintf("%d jobs frozen", len(frozen))
	}

	switch {
	case len(active) >= 2 && (short || stalled || over) && (settled || emergency) && newestFreezable(active) > 0:
		// Memory runs out: stop the newest job's growth. The oldest job
		// always runs, so the build moves on and frees memory.
		plan.Freeze = active[newestFreezable(active)].ID
		switch {
		case short:
		case stalled:
			plan.Why = fmt.Sprintf("memory pressure full %.0f%%", p.full)
		default:
			plan.Why = fmt.Sprintf("the running jobs are expected to grow %d MiB more than the %d MiB left", (-free)>>20, max(s.Available-reserve, 0)>>20)
		}
		p.lastMove = now
	case len(frozen) > 0 && len(active) == 0:
		// Nothing else runs: the oldest frozen job goes on, whatever the
		// memory (a frozen job is never killed and never waits forever).
		plan.Thaw, plan.Why = frozen[0].ID, "no other job runs"
		p.lastMove = now
	case len(frozen) > 0 && !short && !stalled && settled && p.some < p.t.HoldPressure:
		f := frozen[0]
		if rest := max(f.Need-f.Used, 0); rest <= free {
			plan.Thaw, plan.Why = f.ID, fmt.Sprintf("its remaining %d MiB fit", rest>>20)
			p.lastMove = now
		}
	}
	return plan
}

// newestFreezable returns the index of the newest job of active (sorted
// oldest first) that may be frozen, 0 when none but the oldest: the oldest
// is never frozen.
func newestFreezable(active []Job) int {
	for i := len(active) - 1; i > 0; i-- {
		if !active[i].Fixed {
			return i
		}
	}
	return 0
}

// byStart orders jobs oldest first; of jobs started at the same time the
// one of the smaller ID (the Governor's are in order of Add) is older.
func byStart(a, b Job) int {
	return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.ID, b.ID))
}

// pressure updates the recent stall shares from the totals' change since
// the last sample: PSI's own averages span ten seconds at least, too slow
// for a compile that fills memory in two.
func (p *Policy) pressure(now time.Time, s Sample) {
	if !s.HasPressure {
		p.some, p.full = 0, 0
		return
	}
	if !p.lastAt.IsZero() && now.After(p.lastAt) {
		dt := now.Sub(p.lastAt)
		us := float64(dt.Microseconds())
		some := 100 * float64(s.Pressure.SomeTotal-p.last.Pressure.SomeTotal) / us
		full := 100 * float64(s.Pressure.FullTotal-p.last.Pressure.FullTotal) / us
		// A decaying average over about a second.
		a := min(dt.Seconds(), 1)
		p.some += a * (min(max(some, 0), 100) - p.some)
		p.full += a * (min(max(full, 0), 100) - p.full)
	} else {
		p.some, p.full = s.Pressure.Some10, s.Pressure.Full10
	}
	p.last, p.lastAt = s, now
}
