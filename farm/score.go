package farm

import (
	"math"
	"time"
)

// Scoring, modelled on icecream's scheduler (icecc-scheduler's
// pick_server): a host's worth is its measured compile speed, output
// bytes per second of jobs it finished, so a fast machine gets more work
// and a slow or overloaded one less. Three corrections:
//
//   - an unmeasured host is assumed as fast as the mean of the measured
//     ones (icecream likewise tries hosts it has no statistics for), or
//     Config.DefaultSpeed before any job finished;
//   - sending costs: the fixed SendCost and two probed round trips are
//     added to the expected time of a job of mean size;
//   - load and failures: the expected time grows with the share of the
//     host's slots in use (so jobs spread over equal hosts) and with its
//     recent failures, which fade with FailureHalfLife.
//
// The score is the reciprocal of the expected seconds, so higher is
// better and hosts compare by a single number.

// scoreLocked returns h's score at now. f.mu held.
func (f *Farm) scoreLocked(h *hostState, now time.Time) float64 {
	speed := h.speed
	if speed == 0 {
		speed = f.meanSpeedLocked()
	}
	bytes := f.cfg.DefaultBytes
	if f.jobs > 0 {
		bytes = f.bytes / f.jobs
	}
	secs := (f.cfg.SendCost + 2*h.rtt).Seconds() + bytes/speed
	secs *= 1 + 0.25*float64(h.running)/float64(max(h.Slots, 1))
	secs *= 1 + f.decayedLocked(h, now)
	return 1 / secs
}

// meanSpeedLocked is the mean speed of the measured hosts, or the default.
func (f *Farm) meanSpeedLocked() float64 {
	sum, n := 0.0, 0
	for i := range f.hosts {
		if s := f.hosts[i].speed; s > 0 {
			sum += s
			n++
		}
	}
	if n == 0 {
		return f.cfg.DefaultSpeed
	}
	return sum / float64(n)
}

// decayedLocked returns h's failure score faded to now.
func (f *Farm) decayedLocked(h *hostState, now time.Time) float64 {
	if h.failScore == 0 {
		return 0
	}
	age := now.Sub(h.lastFail).Seconds()
	return h.failScore * math.Exp2(-age/f.cfg.FailureHalfLife.Seconds())
}
