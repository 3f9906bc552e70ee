package daemon

// remeasure picks the jobs, among those whose output's peak RSS is known,
// that are measured again (run as the launcher's child, not handed off),
// so that the store follows sources and flags that change: one in every
// interval, which starts at remeasureMin, doubles up to remeasureMax each
// time a re-measure agrees with the store (within remeasureTolerance) and
// falls back to remeasureMin when one does not. A build whose peaks hold
// still costs one measured launch in remeasureMax; one whose peaks move is
// sampled one in remeasureMin. The zero value starts at remeasureMin.
type remeasure struct {
	interval int // 0: remeasureMin
	left     int // launches until the next re-measure
}

const (
	remeasureMin = 8
	remeasureMax = 128
	// remeasureTolerance is the relative difference (1/n) within which
	// a re-measured peak agrees with the store: a tenth, the margin a
	// known job's need has over its peak.
	remeasureTolerance = 10
)

// next reports whether the next job with a known peak is measured again.
func (r *remeasure) next() bool {
	if r.interval == 0 {
		r.interval, r.left = remeasureMin, remeasureMin
	}
	r.left--
	if r.left > 0 {
		return false
	}
	r.left = r.interval
	return true
}

// result takes a re-measure: old, the stored peak, against measured.
func (r *remeasure) result(old, measured int64) {
	diff := measured - old
	if diff < 0 {
		diff = -diff
	}
	if diff*remeasureTolerance <= old {
		r.interval = min(2*max(r.interval, remeasureMin), remeasureMax)
	} else {
		r.interval = remeasureMin
	}
	r.left = min(r.left, r.interval)
}
