package runtime

import "testing"

// schedCounts keeps its two halves apart: adding to one never changes the
// other, and the spinning rule reads both.
func TestSchedCounts(t *testing.T) {
	var c schedCounts
	c.addIdle(3)
	if got := c.addSpinning(2); got != 2 {
		t.Fatalf("addSpinning(2) = %d, want 2", got)
	}
	c.addIdle(-1)
	if s, idle := c.load(); s != 2 || idle != 2 {
		t.Fatalf("load = %d, %d, want 2, 2", s, idle)
	}
	if got := c.addSpinning(-2); got != 0 || c.idle() != 2 {
		t.Fatalf("addSpinning(-2) = %d with idle %d, want 0 with 2", got, c.idle())
	}
	c.addIdle(-2)
	if c.v.Load() != 0 {
		t.Fatalf("word %#x after undoing everything, want 0", c.v.Load())
	}

	if c.casSpinning(1, 2) {
		t.Error("casSpinning(1, 2) succeeded with spinning 0")
	}
	c.addIdle(5)
	if !c.casSpinning(0, 1) || c.spinning() != 1 || c.idle() != 5 {
		t.Errorf("casSpinning(0, 1): spinning %d idle %d, want 1 and 5", c.spinning(), c.idle())
	}
	c.addSpinning(-1)
	c.addIdle(-5)

	// Rule 4: start while 2*spinning < workers - idle.
	for _, tc := range []struct {
		workers, spinning, idle int32
		want                    bool
	}{
		{16, 0, 15, true},  // one busy worker, nobody spins
		{16, 0, 16, false}, // everyone parked
		{16, 1, 14, false}, // 2 busy, 1 spins: 2*1 >= 2
		{16, 1, 13, true},  // 3 busy, 1 spins
		{16, 4, 7, true},   // 9 busy, 4 spin
		{16, 4, 8, false},  // 8 busy, 4 spin
	} {
		var c schedCounts
		c.addIdle(tc.idle)
		c.addSpinning(tc.spinning)
		if got := c.startSpinning(tc.workers); got != tc.want {
			t.Errorf("%d workers, %d spinning, %d parked: startSpinning = %v, want %v",
				tc.workers, tc.spinning, tc.idle, got, tc.want)
		}
		want := tc.spinning
		if tc.want {
			want++
		}
		if s, idle := c.load(); s != want || idle != tc.idle {
			t.Errorf("%d workers, %d spinning, %d parked: after startSpinning %d spinning, %d parked",
				tc.workers, tc.spinning, tc.idle, s, idle)
		}
	}
}
