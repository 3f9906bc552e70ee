package buildgraph

import "math"

// The Scheduler's count of each waiting task's dependencies that have not
// succeeded: a byte a task (Scheduler.unmet), with the rare task that has
// unmetSkipped or more dependencies (a link of everything, the sink of a
// wide graph) counted in a map.
const (
	// unmetMany in unmet says the count is in Scheduler.bigUnmet.
	unmetMany = math.MaxUint8
	// unmetSkipped in unmet marks a Skipped task: it has fewer
	// dependencies than this, so the successes of the rest cannot bring
	// its count to zero and make it ready.
	unmetSkipped = unmetMany - 1
)

// setUnmet sets the count of the task at x to c.
func (s *Scheduler) setUnmet(x int32, c int) {
	if c < unmetSkipped {
		s.unmet[x] = uint8(c)
		return
	}
	if s.bigUnmet == nil {
		s.bigUnmet = make(map[int32]int32)
	}
	s.unmet[x], s.bigUnmet[x] = unmetMany, int32(c)
}

// depSucceeded counts one more succeeded dependency of the task at x and
// reports whether it has none left: it is ready.
func (s *Scheduler) depSucceeded(x int32) bool {
	if u := s.unmet[x]; u != unmetMany {
		s.unmet[x] = u - 1
		return u == 1
	}
	s.bigUnmet[x]--
	return s.bigUnmet[x] == 0
}

// depFailed marks the task at x Skipped in its count, so that it never
// becomes ready.
func (s *Scheduler) depFailed(x int32) {
	if s.unmet[x] != unmetMany {
		s.unmet[x] = unmetSkipped
		return
	}
	s.bigUnmet[x] = math.MaxInt32
}
