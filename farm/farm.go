package farm

import (
	"fmt"
	"sync"
	"time"

	"github.com/numasteal/numasteal/topology/domains"
)

// Level names the farm as a scheduling-domain level: the outermost one,
// above domains.Machine. Like a NUMA level it is only used when the
// levels below are busy, and it costs more (SendCost, network).
const Level domains.LevelName = "FARM"

// Config tunes a Farm. Zero fields take the defaults in brackets; the
// values are guesses, to be tuned against real farms.
type Config struct {
	// SendCost is the fixed price of a remote job beyond its compile:
	// connection, transfer of the preprocessed source and of the object
	// back [20ms]. A host's probed round-trip time is added twice.
	SendCost time.Duration
	// DefaultSpeed is the speed assumed of a host before any of its jobs
	// finished, in output bytes per compile-second, when no host has
	// measured one yet [256 KiB/s]. Once some have, an unmeasured host is
	// assumed as fast as their mean, so new hosts get tried.
	DefaultSpeed float64
	// DefaultBytes is the object size assumed before any job finished
	// [32 KiB]; later the mean of the finished ones.
	DefaultBytes float64
	// BackoffBase and BackoffMax bound the time a failed host stays down:
	// BackoffBase after its first consecutive failure, doubling with each
	// further one, at most BackoffMax [2s, 5m].
	BackoffBase, BackoffMax time.Duration
	// FailureHalfLife is how fast the memory of a host's failures fades
	// in its score once it is up again [1m].
	FailureHalfLife time.Duration
	// SpeedWeight is the weight of the newest measurement in a host's
	// moving average of speed [0.3].
	SpeedWeight float64
}

func (c *Config) defaults() {
	if c.SendCost <= 0 {
		c.SendCost = 20 * time.Millisecond
	}
	if c.DefaultSpeed <= 0 {
		c.DefaultSpeed = 256 << 10
	}
	if c.DefaultBytes <= 0 {
		c.DefaultBytes = 32 << 10
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = 2 * time.Second
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = 5 * time.Minute
	}
	if c.FailureHalfLife <= 0 {
		c.FailureHalfLife = time.Minute
	}
	if c.SpeedWeight <= 0 || c.SpeedWeight > 1 {
		c.SpeedWeight = 0.3
	}
}

// Farm is the placement state of a compile farm: per host its slots in
// use, finished jobs, failures, measured speed and back-off. It is safe
// for concurrent use. Every Acquire that succeeds must be followed by
// exactly one Release of its Lease.
type Farm struct {
	cfg Config

	mu    sync.Mutex
	hosts []hostState
	// Totals over all hosts, for the defaults of unmeasured hosts.
	bytes, jobs float64
}

// hostState is one host's record. Guarded by Farm.mu.
type hostState struct {
	Host
	rtt       time.Duration // probed round trip; 0 unknown
	running   int
	jobs      int
	failures  int
	consec    int       // consecutive failures, for the back-off
	downUntil time.Time // zero when up
	lastFail  time.Time
	failScore float64 // failures decayed by FailureHalfLife at lastFail
	speed     float64 // moving average, output bytes per second; 0 unknown
	lastErr   string
}

// New returns a Farm over hosts, all up, none measured.
func New(hosts []Host, cfg Config) *Farm {
	cfg.defaults()
	f := &Farm{cfg: cfg}
	for _, h := range hosts {
		f.hosts = append(f.hosts, hostState{Host: h})
	}
	return f
}

// Hosts returns the farm's hosts in list order.
func (f *Farm) Hosts() []Host {
	out := make([]Host, len(f.hosts))
	for i := range f.hosts {
		out[i] = f.hosts[i].Host
	}
	return out
}

// Slots returns the total slots of the farm's hosts.
func (f *Farm) Slots() int {
	n := 0
	for i := range f.hosts {
		n += f.hosts[i].Slots
	}
	return n
}

// SetRTT records a host's probed round-trip time (see Probe), which adds
// to its send cost.
func (f *Farm) SetRTT(host int, rtt time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hosts[host].rtt = rtt
}

// Lease is one slot on one host, held from Acquire to Release.
type Lease struct {
	// Index is the host's position in the list.
	Index int
	// Host is the host.
	Host Host
	// Start is the Acquire time.
	Start time.Time
}

// Acquire takes a slot on the host with the best score at now, among the
// hosts that are up and have a free slot; ok is false when there is none
// (the caller runs the job locally or waits).
func (f *Farm) Acquire(now time.Time) (l Lease, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	best, bestScore := -1, 0.0
	for i := range f.hosts {
		h := &f.hosts[i]
		if h.running >= h.Slots || now.Before(h.downUntil) {
			continue
		}
		if s := f.scoreLocked(h, now); best < 0 || s > bestScore {
			best, bestScore = i, s
		}
	}
	if best < 0 {
		return Lease{}, false
	}
	f.hosts[best].running++
	return Lease{Index: best, Host: f.hosts[best].Host, Start: now}, true
}

// NextUp returns the earliest time after now at which a host that is
// down, with a free slot, comes back up; ok is false when there is none.
// A caller whose Acquire failed while jobs wait retries then (a Release
// is the other moment a slot frees).
func (f *Farm) NextUp(now time.Time) (t time.Time, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.hosts {
		h := &f.hosts[i]
		if h.running < h.Slots && now.Before(h.downUntil) && (!ok || h.downUntil.Before(t)) {
			t, ok = h.downUntil, true
		}
	}
	return t, ok
}

// Outcome is how a remote job ended, for Release.
type Outcome struct {
	// OK is true when the host compiled the job.
	OK bool
	// HostFault is true when the host, not the source, is to blame: it
	// refused the connection, timed out, or distcc reported an internal
	// error. It marks the host down. A job that failed without HostFault
	// (a compile error) counts against nobody.
	HostFault bool
	// Bytes is the size of the object a successful job produced.
	Bytes int64
	// Elapsed is how long the remote step took (the compile with its
	// transfers); 0 means the time since Acquire.
	Elapsed time.Duration
	// Err describes a failure, for Stats.
	Err error
}

// Release returns l's slot at now with the job's outcome: a success
// updates the host's speed (Bytes over the time since Acquire), a host
// fault counts a failure and takes the host down for its back-off.
// Release(l, Outcome{}, now) gives back a slot that was never used.
func (f *Farm) Release(l Lease, o Outcome, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := &f.hosts[l.Index]
	h.running--
	switch {
	case o.OK:
		h.jobs++
		h.consec = 0
		el := o.Elapsed
		if el <= 0 {
			el = now.Sub(l.Start)
		}
		if secs := el.Seconds(); secs > 0 && o.Bytes > 0 {
			v := float64(o.Bytes) / secs
			if h.speed == 0 {
				h.speed = v
			} else {
				h.speed += f.cfg.SpeedWeight * (v - h.speed)
			}
			f.bytes += float64(o.Bytes)
			f.jobs++
		}
	case o.HostFault:
		h.failures++
		h.consec++
		h.failScore = f.decayedLocked(h, now) + 1
		h.lastFail = now
		back := f.cfg.BackoffBase << min(h.consec-1, 30)
		if back <= 0 || back > f.cfg.BackoffMax {
			back = f.cfg.BackoffMax
		}
		h.downUntil = now.Add(back)
		if o.Err != nil {
			h.lastErr = o.Err.Error()
		}
	}
}

// HostStats is one host's state, for `numasteal farm status` and the run
// summary.
type HostStats struct {
	Host Host
	// Running is the slots in use now.
	Running int
	// Jobs counts the jobs the host compiled; Failures the host faults.
	Jobs, Failures int
	// Speed is the measured speed in output bytes per compile-second, or
	// 0 before the first job.
	Speed float64
	// Down is true while the host backs off after a failure, until
	// DownUntil.
	Down      bool
	DownUntil time.Time
	// Score is the host's placement score now (higher is better; 0 when
	// down): the reciprocal of its expected seconds per job.
	Score float64
	// RTT is the probed round-trip time, or 0.
	RTT time.Duration
	// LastErr is the last failure's message.
	LastErr string
}

// Stats returns every host's state at now, in list order.
func (f *Farm) Stats(now time.Time) []HostStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]HostStats, len(f.hosts))
	for i := range f.hosts {
		h := &f.hosts[i]
		s := HostStats{Host: h.Host, Running: h.running, Jobs: h.jobs, Failures: h.failures, Speed: h.speed,
			RTT: h.rtt, LastErr: h.lastErr}
		if now.Before(h.downUntil) {
			s.Down, s.DownUntil = true, h.downUntil
		} else {
			s.Score = f.scoreLocked(h, now)
		}
		out[i] = s
	}
	return out
}

// String returns a one-line summary of a host's stats.
func (s HostStats) String() string {
	state := "up"
	if s.Down {
		state = "down"
	}
	return fmt.Sprintf("%s %s running %d/%d jobs %d failures %d speed %.0f B/s score %.3f", s.Host.Addr(), state,
		s.Running, s.Host.Slots, s.Jobs, s.Failures, s.Speed, s.Score)
}
