package memory

import "slices"

// Prior is what the recent jobs of one kind (a build's compiles, its
// links) held at their peaks: the need of the next job of that kind
// whose own peak is not known, so that a first build learns from its own
// first jobs instead of starting several large compiles together on a
// guess. It keeps the last PriorSize peaks; its zero value is empty and
// ready. Not safe for concurrent use.
type Prior struct {
	peaks [PriorSize]int64
	n     int
}

// PriorSize is how many recent peaks a Prior keeps.
const PriorSize = 32

// Add records the peak of a job that ended.
func (p *Prior) Add(peak int64) {
	if peak <= 0 {
		return
	}
	p.peaks[p.n%PriorSize] = peak
	p.n++
}

// Need returns the ninth decile of the peaks kept (the largest while
// fewer than ten are kept), or guess when none is: a need that most jobs
// of the kind stay under, and that one unusual job does not impose on all
// that follow. It is raised to holding, what a running job of the kind
// holds now: a running job's use so far is a floor of its peak, never a
// ceiling.
func (p *Prior) Need(guess, holding int64) int64 {
	k := min(p.n, PriorSize)
	if k == 0 {
		return max(guess, holding)
	}
	v := slices.Clone(p.peaks[:k])
	slices.Sort(v)
	i := k * 9 / 10
	if k*9%10 == 0 {
		i--
	}
	return max(v[i], holding)
}
