package deque

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

// dequeInts returns n distinct *int with values 0..n-1.
func dequeInts(n int) []*int {
	ps := make([]*int, n)
	for i := range ps {
		v := i
		ps[i] = &v
	}
	return ps
}

// dequeVal is *p, or -1 for nil, for readable failures.
func dequeVal(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

func TestDequeEmpty(t *testing.T) {
	for _, logCap := range []int{0, 1, 8} {
		d := newDeque[int](logCap)
		s := d.Stealer()
		if x := d.Pop(); x != nil {
			t.Errorf("logCap %d: Pop on empty = %d, want nil", logCap, *x)
		}
		if x, retry := s.Steal(); x != nil || retry {
			t.Errorf("logCap %d: Steal on empty = (%d, %v), want (nil, false)", logCap, dequeVal(x), retry)
		}
		dst := newDeque[int](0)
		if first, n := s.StealHalf(dst, 8); first != nil || n != 0 || dst.Len() != 0 {
			t.Errorf("logCap %d: StealHalf on empty = (%d, %d), dst.Len %d; want (nil, 0), 0",
				logCap, dequeVal(first), n, dst.Len())
		}
		if d.Len() != 0 || s.Len() != 0 {
			t.Errorf("logCap %d: Len = %d/%d, want 0", logCap, d.Len(), s.Len())
		}
		// Emptied again after use.
		d.Push(new(int))
		d.Pop()
		if x := d.Pop(); x != nil {
			t.Errorf("logCap %d: Pop after push+pop = %d, want nil", logCap, *x)
		}
		if x, _ := s.Steal(); x != nil {
			t.Errorf("logCap %d: Steal after push+pop = %d, want nil", logCap, *x)
		}
	}
}

// TestDequeScripts runs fixed single-goroutine scripts. Each op is "push N",
// "pop", "steal" or "half M" (StealHalf with maxN M into a scratch deque);
// want lists what each taking op returns, -1 for nil, and for "half" the
// first element followed by what dst then pops.
func TestDequeScripts(t *testing.T) {
	tests := []struct {
		name string
		ops  string
		want []int
	}{
		{"lifo pop", "push 0 push 1 push 2 pop pop pop pop", []int{2, 1, 0, -1}},
		{"fifo steal", "push 0 push 1 push 2 steal steal steal steal", []int{0, 1, 2, -1}},
		{"both ends", "push 0 push 1 push 2 push 3 steal pop steal pop pop steal", []int{0, 3, 1, 2, -1, -1}},
		{"interleaved", "push 0 pop push 1 push 2 steal push 3 pop pop", []int{0, 1, 3, 2}},
		{"half of 6", "push 0 push 1 push 2 push 3 push 4 push 5 half 9 pop steal", []int{0, 2, 1, 5, 3}},
		{"half of 5 rounds up", "push 0 push 1 push 2 push 3 push 4 half 9 pop pop", []int{0, 2, 1, 4, 3}},
		{"half of 1", "push 0 half 9 pop steal", []int{0, -1, -1}},
		{"half bounded", "push 0 push 1 push 2 push 3 push 4 push 5 half 2 steal", []int{0, 1, 2}},
		{"half maxN 0 means 1", "push 0 push 1 push 2 push 3 half 0 steal", []int{0, 1}},
		{"half of empty", "half 4", []int{-1}},
	}
	for _, tt := range tests {
		for _, logCap := range []int{0, 1, 2, 8} {
			t.Run(fmt.Sprintf("%s/logCap=%d", tt.name, logCap), func(t *testing.T) {
				vals := dequeInts(16)
				d := newDeque[int](logCap)
				s := d.Stealer()
				var got []int
				f := strings.Fields(tt.ops)
				for i := 0; i < len(f); i++ {
					switch f[i] {
					case "push":
						i++
						var v int
						fmt.Sscan(f[i], &v)
						d.Push(vals[v])
					case "pop":
						got = append(got, dequeVal(d.Pop()))
					case "steal":
						x, retry := s.Steal()
						if retry {
							t.Fatalf("Steal without contention returned retry")
						}
						got = append(got, dequeVal(x))
					case "half":
						i++
						var m int
						fmt.Sscan(f[i], &m)
						dst := newDeque[int](0)
						first, n := s.StealHalf(dst, m)
						got = append(got, dequeVal(first))
						if k := dst.Len(); n != k+1 && !(n == 0 && k == 0) {
							t.Errorf("StealHalf n = %d, but dst holds %d", n, k)
						}
						for x := dst.Pop(); x != nil; x = dst.Pop() {
							got = append(got, *x)
						}
					default:
						t.Fatalf("bad op %q", f[i])
					}
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("%s: got %v, want %v", tt.ops, got, tt.want)
				}
			})
		}
	}
}

// TestDequeGrowWraparound fills a 4-slot ring whose live range wraps past
// the end of the array, then grows it, and checks every element survives in
// order.
func TestDequeGrowWraparound(t *testing.T) {
	vals := dequeInts(32)
	d := newDeque[int](2)
	s := d.Stealer()
	for _, v := range vals[:3] {
		d.Push(v)
	}
	for want := range 2 { // top = 2
		if x, _ := s.Steal(); dequeVal(x) != want {
			t.Fatalf("Steal = %d, want %d", dequeVal(x), want)
		}
	}
	for _, v := range vals[3:6] { // indices 3,4,5 -> slots 3,0,1: wrapped
		d.Push(v)
	}
	if c := d.capacity(); c != 4 {
		t.Fatalf("capacity before growth = %d, want 4", c)
	}
	old := d.ring.Load()
	d.Push(vals[6]) // 5 live elements > 4 slots: grows
	if c := d.capacity(); c != 8 {
		t.Fatalf("capacity after growth = %d, want 8", c)
	}
	for _, v := range vals[7:20] {
		d.Push(v)
	}
	if c := d.capacity(); c != 32 {
		t.Fatalf("capacity after 18 live = %d, want 32", c)
	}
	if d.Len() != 18 {
		t.Fatalf("Len = %d, want 18", d.Len())
	}
	// The old ring is left intact for thieves that still hold it.
	for i := int64(2); i < 6; i++ {
		if got := dequeVal(old.load(i)); got != int(i) {
			t.Errorf("old ring index %d = %d, want %d", i, got, i)
		}
	}
	// Steal the oldest half, pop the rest: 2..10 then 19..11.
	var got []int
	for range 9 {
		x, _ := s.Steal()
		got = append(got, dequeVal(x))
	}
	for x := d.Pop(); x != nil; x = d.Pop() {
		got = append(got, *x)
	}
	want := []int{2, 3, 4, 5, 6, 7, 8, 9, 10, 19, 18, 17, 16, 15, 14, 13, 12, 11}
	if !slices.Equal(got, want) {
		t.Errorf("after growth got %v, want %v", got, want)
	}
}

func TestDequeNewClamp(t *testing.T) {
	tests := []struct{ logCap, want int }{
		{-5, 1}, {0, 1}, {3, 8}, {dequeLogCap, 256}, {99, 1 << dequeMaxLogCap},
	}
	for _, tt := range tests {
		if got := newDeque[int](tt.logCap).capacity(); got != tt.want {
			t.Errorf("newDeque(%d).capacity() = %d, want %d", tt.logCap, got, tt.want)
		}
	}
	if got := New[int]().capacity(); got != 1<<dequeLogCap {
		t.Errorf("New().capacity() = %d, want %d", got, 1<<dequeLogCap)
	}
}

func TestDequePushNilPanics(t *testing.T) {
	defer func() {
		r := recover()
		if s, _ := r.(string); !strings.HasPrefix(s, "deque: Deque.Push:") {
			t.Errorf("Push(nil) panic = %v, want a deque: Deque.Push: message", r)
		}
	}()
	newDeque[int](0).Push(nil)
}

// TestDequeSequentialModel drives one deque (and a StealHalf destination)
// with random single-goroutine operations and compares every result with a
// slice model, across tiny and default capacities.
func TestDequeSequentialModel(t *testing.T) {
	const steps = 20000
	for _, logCap := range []int{0, 1, 3, 8} {
		seed := uint64(logCap) + 1
		rng := rand.New(rand.NewPCG(seed, 99))
		vals := dequeInts(steps)
		d, dst := newDeque[int](logCap), newDeque[int](logCap)
		var model, dstModel []int
		next := 0
		for step := range steps {
			switch op := rng.IntN(10); {
			case op < 5 && next < len(vals):
				d.Push(vals[next])
				model = append(model, next)
				next++
			case op < 7:
				want := -1
				if len(model) > 0 {
					want, model = model[len(model)-1], model[:len(model)-1]
				}
				if got := dequeVal(d.Pop()); got != want {
					t.Fatalf("logCap %d step %d: Pop = %d, want %d", logCap, step, got, want)
				}
			case op < 9:
				want := -1
				if len(model) > 0 {
					want, model = model[0], model[1:]
				}
				x, retry := d.Stealer().Steal()
				if got := dequeVal(x); got != want || retry {
					t.Fatalf("logCap %d step %d: Steal = (%d, %v), want (%d, false)", logCap, step, got, retry, want)
				}
			default:
				maxN := rng.IntN(6)
				k := min((len(model)+1)/2, max(maxN, 1))
				first, n := d.Stealer().StealHalf(dst, maxN)
				if n != k {
					t.Fatalf("logCap %d step %d: StealHalf(%d) of %d took %d, want %d", logCap, step, maxN, len(model), n, k)
				}
				if k > 0 {
					if got := dequeVal(first); got != model[0] {
						t.Fatalf("logCap %d step %d: StealHalf first = %d, want %d", logCap, step, got, model[0])
					}
					dstModel = append(dstModel, model[1:k]...)
					model = model[k:]
				}
				// Drain dst now and then so it stays small but wraps.
				for len(dstModel) > 3 {
					want := dstModel[len(dstModel)-1]
					dstModel = dstModel[:len(dstModel)-1]
					if got := dequeVal(dst.Pop()); got != want {
						t.Fatalf("logCap %d step %d: dst Pop = %d, want %d", logCap, step, got, want)
					}
				}
			}
			if d.Len() != len(model) {
				t.Fatalf("logCap %d step %d: Len = %d, want %d", logCap, step, d.Len(), len(model))
			}
		}
	}
}

// dequeStressConfig shapes the owner's behaviour in TestDequeStress.
type dequeStressConfig struct {
	name    string
	logCap  int
	items   int
	burst   int // the owner pushes 1..burst items before popping some
	popFrac int // percent of each burst the owner pops back at once
	spin    int // the owner idles up to spin loop turns after each burst
	fresh   int // if > 0, the owner moves to a new deque every fresh items
	thieves int
}

// TestDequeStress runs one owner pushing and popping against several
// thieves that Steal and StealHalf (into their own deques, which other
// thieves rob in turn), and checks that every item is taken exactly once:
// none lost, none duplicated. Run it under -race.
func TestDequeStress(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	scale := 1
	if testing.Short() {
		scale = 4
	}
	tests := []dequeStressConfig{
		// Deep bursts from a 2-slot ring: repeated growth, wraparound.
		{name: "bursty growth", logCap: 1, items: 120000 / scale, burst: 600, popFrac: 40, thieves: 3},
		// One or two items at a time: the owner's Pop and the thieves'
		// Steal keep fighting over the last element (the CAS on top).
		{name: "last element", logCap: 0, items: 60000 / scale, burst: 2, popFrac: 100, spin: 400, thieves: 4},
		// A new 1-slot deque every 200 items: hundreds of growths, each
		// under fire from thieves that may still read the old ring.
		{name: "repeated growth", logCap: 0, items: 60000 / scale, burst: 40, popFrac: 30, spin: 300, fresh: 200, thieves: 3},
		{name: "default capacity", logCap: dequeLogCap, items: 120000 / scale, burst: 64, popFrac: 50, thieves: 3},
	}
	for _, cfg := range tests {
		t.Run(cfg.name, func(t *testing.T) { dequeStress(t, cfg) })
	}
}

func dequeStress(t *testing.T, cfg dequeStressConfig) {
	vals := dequeInts(cfg.items)
	taken := make([]atomic.Int32, cfg.items)
	take := func(x *int) {
		if x == nil || *x < 0 || *x >= cfg.items || vals[*x] != x {
			t.Errorf("took a pointer that was never pushed: %p", x)
			return
		}
		taken[*x].Add(1)
	}

	// The owner's current deque; thieves reload it every time.
	var cur atomic.Pointer[Deque[int]]
	cur.Store(newDeque[int](cfg.logCap))
	own := make([]*Deque[int], cfg.thieves) // thieves' own deques
	for i := range own {
		own[i] = newDeque[int](cfg.logCap)
	}
	var (
		done    atomic.Bool
		wg      sync.WaitGroup
		stolen  atomic.Int64
		aborted atomic.Int64
	)
	for i := range cfg.thieves {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			mine := own[i]
			for !done.Load() {
				// Mostly rob the owner; sometimes a fellow thief.
				victim := cur.Load().Stealer()
				if rng.IntN(4) == 0 {
					victim = own[(i+1)%cfg.thieves].Stealer()
				}
				if rng.IntN(2) == 0 {
					x, retry := victim.Steal()
					if retry {
						aborted.Add(1)
					}
					if x != nil {
						stolen.Add(1)
						take(x)
					}
				} else if first, n := victim.StealHalf(mine, 1+rng.IntN(32)); n > 0 {
					stolen.Add(int64(n))
					take(first)
					// Run some of the loot, leave the rest to be robbed.
					for range rng.IntN(n) {
						if x := mine.Pop(); x != nil {
							take(x)
						}
					}
				}
				if rng.IntN(16) == 0 {
					goruntime.Gosched()
				}
			}
			// Only we push to mine, and we have stopped: drain it.
			for x := mine.Pop(); x != nil; x = mine.Pop() {
				take(x)
			}
		})
	}

	rng := rand.New(rand.NewPCG(uint64(cfg.items), 3))
	owner := cur.Load()
	maxCap, growths := owner.capacity(), 0
	retire := func() { // drain owner; count how often its ring doubled
		for x := owner.Pop(); x != nil; x = owner.Pop() {
			take(x)
		}
		maxCap = max(maxCap, owner.capacity())
		growths += bits.Len(uint(owner.capacity())) - 1 - cfg.logCap
	}
	for next, last := 0, 0; next < cfg.items; {
		n := min(1+rng.IntN(cfg.burst), cfg.items-next)
		for range n {
			owner.Push(vals[next])
			next++
		}
		if cfg.spin > 0 {
			// Give the thieves a window on a short deque.
			for range rng.IntN(cfg.spin) {
				if owner.Len() == 0 {
					break
				}
			}
		}
		for range n * cfg.popFrac / 100 {
			if x := owner.Pop(); x != nil {
				take(x)
			}
		}
		if cfg.fresh > 0 && next-last >= cfg.fresh {
			// Empty, and never pushed to again: thieves still
			// holding it find nothing, so nothing is left behind.
			retire()
			owner, last = newDeque[int](cfg.logCap), next
			cur.Store(owner)
		}
	}
	retire()
	done.Store(true)
	wg.Wait()

	lost, dup := 0, 0
	for i := range taken {
		switch c := taken[i].Load(); {
		case c == 0:
			if lost++; lost <= 5 {
				t.Errorf("item %d was never taken", i)
			}
		case c > 1:
			if dup++; dup <= 5 {
				t.Errorf("item %d was taken %d times", i, c)
			}
		}
	}
	if lost+dup > 0 {
		t.Errorf("%d items lost, %d duplicated of %d", lost, dup, cfg.items)
	}
	if cfg.logCap < dequeLogCap && growths == 0 {
		t.Errorf("owner ring never grew past %d slots", maxCap)
	}
	t.Logf("%d items, %d stolen, %d lost races; owner ring grew %d times, up to %d slots",
		cfg.items, stolen.Load(), aborted.Load(), growths, maxCap)
}

// TestDequeNoAllocs checks that Push, Pop, Steal and StealHalf do not
// allocate once the rings are big enough.
func TestDequeNoAllocs(t *testing.T) {
	vals := dequeInts(8)
	d, dst := newDeque[int](3), newDeque[int](3)
	s := d.Stealer()
	var sink *int
	tests := []struct {
		name string
		fn   func()
	}{
		{"Push+Pop", func() { d.Push(vals[0]); sink = d.Pop() }},
		{"Push+Steal", func() { d.Push(vals[1]); sink, _ = s.Steal() }},
		{"Pop empty", func() { sink = d.Pop() }},
		{"Steal empty", func() { sink, _ = s.Steal() }},
		{"StealHalf", func() {
			for _, v := range vals[:6] {
				d.Push(v)
			}
			sink, _ = s.StealHalf(dst, 4)
			for dst.Pop() != nil {
			}
			for d.Pop() != nil {
			}
		}},
	}
	for _, tt := range tests {
		if got := testing.AllocsPerRun(1000, tt.fn); got != 0 {
			t.Errorf("%s: %v allocs per run, want 0", tt.name, got)
		}
	}
	_ = sink
}
