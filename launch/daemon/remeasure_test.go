package daemon

import "testing"

// measured returns how many of n jobs r picks.
func measured(r *remeasure, n int) int {
	k := 0
	for range n {
		if r.next() {
			k++
		}
	}
	return k
}

func TestRemeasure(t *testing.T) {
	var r remeasure
	if k := measured(&r, 8*remeasureMin); k != 8 {
		t.Fatalf("at the start %d of %d measured; want 8", k, 8*remeasureMin)
	}
	// Peaks that hold still: the interval doubles up to the most.
	for r.interval < remeasureMax {
		before := r.interval
		r.result(100<<20, 105<<20)
		if r.interval != 2*before {
			t.Fatalf("an agreeing re-measure took the interval from %d to %d; want %d", before, r.interval, 2*before)
		}
	}
	r.result(100<<20, 95<<20)
	if r.interval != remeasureMax {
		t.Fatalf("interval %d past the most; want %d", r.interval, remeasureMax)
	}
	if k := measured(&r, 4*remeasureMax); k != 4 {
		t.Fatalf("at the most interval %d of %d measured; want 4", k, 4*remeasureMax)
	}
	// A peak that moved: back to sampling often, from the next jobs on.
	r.result(100<<20, 150<<20)
	if r.interval != remeasureMin {
		t.Fatalf("after a disagreeing re-measure the interval is %d; want %d", r.interval, remeasureMin)
	}
	if k := measured(&r, remeasureMin); k != 1 {
		t.Fatalf("after a disagreement %d of the next %d measured; want 1", k, remeasureMin)
	}
}
