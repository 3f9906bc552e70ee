package deque

import (
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkDequePushPop is the owner's fast path: one Push and one Pop,
// no thieves (the work-first spawn/join of a task that nobody steals).
func BenchmarkDequePushPop(b *testing.B) {
	b.ReportAllocs()
	d := New[int]()
	x := new(int)
	for b.Loop() {
		d.Push(x)
		if d.Pop() == nil {
			b.Fatal("Pop returned nil")
		}
	}
}

// BenchmarkDequePushPopDeep pushes a burst of 64 and pops it back: the
// recursion pattern of fork-join, with the deque holding a few elements.
func BenchmarkDequePushPopDeep(b *testing.B) {
	b.ReportAllocs()
	d := New[int]()
	x := new(int)
	for b.Loop() {
		for range 64 {
			d.Push(x)
		}
		for range 64 {
			d.Pop()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/128, "ns/deque-op")
}

// BenchmarkDequePopEmpty is an idle owner polling its empty deque.
func BenchmarkDequePopEmpty(b *testing.B) {
	b.ReportAllocs()
	d := New[int]()
	for b.Loop() {
		if d.Pop() != nil {
			b.Fatal("Pop on empty returned an element")
		}
	}
}

// BenchmarkDequePushSteal is an uncontended steal: Push then Steal from the
// same goroutine, so it measures the CAS path without cache-line transfers.
func BenchmarkDequePushSteal(b *testing.B) {
	b.ReportAllocs()
	d := New[int]()
	s := d.Stealer()
	x := new(int)
	for b.Loop() {
		d.Push(x)
		if y, _ := s.Steal(); y == nil {
			b.Fatal("Steal returned nil")
		}
	}
}

// BenchmarkDequeStealEmpty is a thief probing an empty victim: the cost of
// a failed steal attempt.
func BenchmarkDequeStealEmpty(b *testing.B) {
	b.ReportAllocs()
	s := New[int]().Stealer()
	for b.Loop() {
		if y, _ := s.Steal(); y != nil {
			b.Fatal("Steal on empty returned an element")
		}
	}
}

// BenchmarkDequeStealHalf moves half of a 64-element deque to a thief's
// deque and back, one StealHalf per iteration.
func BenchmarkDequeStealHalf(b *testing.B) {
	b.ReportAllocs()
	d, dst := New[int](), New[int]()
	x := new(int)
	for range 64 {
		d.Push(x)
	}
	for b.Loop() {
		first, n := d.Stealer().StealHalf(dst, 32)
		if n != 32 {
			b.Fatalf("StealHalf took %d, want 32", n)
		}
		d.Push(first)
		for y := dst.Pop(); y != nil; y = dst.Pop() {
			d.Push(y)
		}
	}
}

// BenchmarkDequeStealContended runs thieves (b.RunParallel, GOMAXPROCS of
// them) against one owner goroutine that keeps the deque topped up with
// Push and also Pops, so steals race each other and the owner. ns/op is per
// successful steal; the owner's pops are reported as owner-pops/op.
func BenchmarkDequeStealContended(b *testing.B) {
	b.ReportAllocs()
	d := New[int]()
	s := d.Stealer()
	x := new(int)
	var stop atomic.Bool
	var pops atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		n := int64(0)
		for i := 0; !stop.Load(); i++ {
			if d.Len() < 64 {
				for range 16 {
					d.Push(x)
				}
			}
			if i%4 == 0 && d.Pop() != nil {
				n++
			}
			if i%64 == 0 {
				goruntime.Gosched() // let thieves run on few CPUs
			}
		}
		pops.Store(n)
	})
	var aborts atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		lost := int64(0)
		for pb.Next() {
			for {
				y, retry := s.Steal()
				if y != nil {
					break
				}
				if retry {
					lost++
				} else {
					goruntime.Gosched()
				}
			}
		}
		aborts.Add(lost)
	})
	stop.Store(true)
	wg.Wait()
	b.ReportMetric(float64(aborts.Load())/float64(b.N), "lost-races/op")
	b.ReportMetric(float64(pops.Load())/float64(b.N), "owner-pops/op")
}

// BenchmarkDequePushPopWithThief is the owner pushing two and popping one
// while a thief keeps stealing from the same deque: the cost contention
// adds to the owner's fast path.
func BenchmarkDequePushPopWithThief(b *testing.B) {
	b.ReportAllocs()
	d := New[int]()
	s := d.Stealer()
	x := new(int)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			if y, _ := s.Steal(); y == nil {
				goruntime.Gosched()
			}
		}
	})
	for b.Loop() {
		d.Push(x)
		d.Push(x)
		d.Pop()
		if d.Len() > 256 { // the thief fell behind: keep the ring bounded
			d.Pop()
		}
	}
	stop.Store(true)
	wg.Wait()
}
