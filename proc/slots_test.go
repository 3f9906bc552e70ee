package proc

import (
	"context"
	"errors"
	"testing"
	"time"
)

func granted(w *slotWaiter) bool {
	select {
	case <-w.ready:
		return true
	default:
		return false
	}
}

// The slot semaphore serves strictly in queue order, gives up a canceled
// place (letting those behind it through), and returns slots granted to a
// waiter that was canceled meanwhile.
func TestSlotSem(t *testing.T) {
	s := newSlotSem(2)
	if s.clamp(0) != 1 || s.clamp(5) != 2 {
		t.Fatalf("clamp: %d %d", s.clamp(0), s.clamp(5))
	}
	a := s.enqueue(1)
	big := s.enqueue(2)
	small := s.enqueue(1)
	if !granted(a) || granted(big) || granted(small) {
		t.Fatalf("granted a=%v big=%v small=%v; want only a (small must queue behind big)", granted(a), granted(big), granted(small))
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.wait(ctx, big); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait on a canceled context: %v", err)
	}
	if !granted(small) || s.used() != 2 {
		t.Fatalf("after big left: small granted %v, used %d", granted(small), s.used())
	}

	s.release(1, time.Time{}) // a
	s.release(1, time.Time{}) // small
	if s.used() != 0 {
		t.Fatalf("used %d after releasing all", s.used())
	}

	// Granted, then canceled before the waiter looked: the slots go back.
	w := s.enqueue(2)
	if !granted(w) {
		t.Fatal("not granted on an empty semaphore")
	}
	if err := s.wait(ctx, w); err == nil {
		// select may pick ready; then the caller owns the slots.
		s.release(2, time.Time{})
	}
	if s.used() != 0 {
		t.Fatalf("used %d after a canceled grant", s.used())
	}
}

// A grant by a release carries the releaser's slice start to the waiter
// (handOverYield); a grant at enqueue carries none.
func TestSlotSemHandsOnSlice(t *testing.T) {
	s := newSlotSem(1)
	a := s.enqueue(1)
	if !granted(a) || !a.slice.IsZero() {
		t.Fatalf("grant at enqueue: granted %v, slice %v; want granted, zero slice", granted(a), a.slice)
	}
	b := s.enqueue(1)
	start := time.Now().Add(-time.Second)
	s.release(1, start)
	if !granted(b) || !b.slice.Equal(start) {
		t.Fatalf("grant by release: granted %v, slice %v; want granted, %v", granted(b), b.slice, start)
	}
	s.release(1, time.Time{})
	if s.used() != 0 {
		t.Fatalf("used %d after releasing all", s.used())
	}
}
