package memory

import "testing"

func TestPriorNeed(t *testing.T) {
	var p Prior
	if got := p.Need(256, 0); got != 256 {
		t.Errorf("empty: Need(256, 0) = %d, want the guess", got)
	}
	if got := p.Need(256, 300); got != 300 {
		t.Errorf("empty: Need(256, 300) = %d, want what a running job holds", got)
	}
	for _, v := range []int64{20, 500, 30, 0, -1} {
		p.Add(v) // 0 and -1 are no peaks
	}
	if got := p.Need(256, 0); got != 500 {
		t.Errorf("three peaks: Need = %d, want the largest (500) while fewer than ten are kept", got)
	}
	for i := range 17 {
		p.Add(int64(20 + i))
	}
	// 20 peaks: one of 500, the rest 20..36 and 30: the ninth decile is
	// the 18th smallest, no longer the one unusual job.
	if got := p.Need(256, 0); got >= 500 {
		t.Errorf("twenty peaks, one of 500: Need = %d, want the ninth decile below it", got)
	}
	for range PriorSize {
		p.Add(7)
	}
	if got := p.Need(256, 0); got != 7 {
		t.Errorf("after %d peaks of 7: Need = %d, want 7 (old peaks forgotten)", PriorSize, got)
	}
	if got := p.Need(256, 9); got != 9 {
		t.Errorf("Need(256, 9) = %d, want 9: a running job's use is a floor", got)
	}
}
