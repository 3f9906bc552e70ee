// Package deque is the runtime's local run queue: a Chase–Lev
// work-stealing deque, with separate handles for the owner (Deque) and for
// thieves (Stealer).
package deque

// The local run queue: a Chase–Lev work-stealing deque.
//
// Every worker owns one Deque. The owner pushes and pops at the bottom (LIFO,
// so a fork-join program runs the task it spawned last, whose data is hot in
// cache); any other goroutine steals from the top (FIFO, so a thief takes the
// oldest, usually biggest, piece of work). The algorithm is the one of
// Chase and Lev, "Dynamic Circular Work-Stealing Deque" (SPAA 2005), in the
// form proven for weak memory models by Lê, Pop, Cohen and Zappa Nardelli,
// "Correct and Efficient Work-Stealing for Weak Memory Models" (PPoPP 2013),
// Fig. 1. Names follow that paper: top, bottom, take (here Pop), steal.
//
// State. Two indices grow without bound, top ≤ bottom (outside a Pop in
// progress, which may leave bottom = top-1 for a moment); the live elements
// are those with index i in [top, bottom), stored at ring slot i mod len.
// Only the owner writes bottom and the ring pointer; top is only ever moved
// forward, by CAS, by thieves and by the owner's Pop of the last element.
//
// Memory ordering. The paper needs relaxed, acquire, release and two
// seq_cst fences. Go's sync/atomic operations are all sequentially
// consistent (the Go memory model: "all the atomic operations executed in a
// program behave as though executed in some sequentially consistent order"),
// and every shared word here — top, bottom, the ring pointer and each slot —
// is accessed only through sync/atomic. That subsumes the paper's orderings
// and fences, and it makes the deque race-detector clean without exemptions:
// there is no plain access to a shared word anywhere (the one plain field,
// ownerTop, is the owner's private cache of top). Each atomic below says
// which access it pairs with, the way proc.go's runqput/runqgrab do. The two
// places where sequential consistency (not just acquire/release) is needed
// are the paper's two fences:
//
//   - Pop: store bottom, then load top (a StoreLoad). Paired with Steal's
//     load top, then load bottom. Under SC at least one side sees the other's
//     write, so the owner and a thief cannot both believe they own the same
//     non-last element; the last element (top == bottom-1) is arbitrated by a
//     CAS on top that both sides perform.
//   - Steal: load top, then load bottom, in that order: a thief that read a
//     stale top reads a bottom at least as new, and its CAS on the stale top
//     fails.
//
// Growth. A push into a full ring copies the live elements into a ring of
// twice the size and publishes it with an atomic store before the bottom
// store that publishes the pushed element. The old ring is never written
// again, so a thief that loaded it still reads the right element for its
// top; whether that element is still its to take is decided only by the CAS
// on top. The garbage collector frees the old ring once no thief holds it
// (the paper's "reclamation" problem does not arise in Go). The ring never
// shrinks.
//
// Why batch steals take one element at a time. Go's runqgrab and Tokio's
// steal_into claim n elements with a single CAS on head, which is sound there
// because the owner's pop also CASes head. Chase–Lev's Pop does not: for a
// non-last element it takes bottom-1 after a plain load of top. A thief that
// reads top = t, reads elements t..t+k-1 and then CASes top from t to t+k
// can lose to an owner that, before the CAS lands, popped down to index t+1
// having seen top = t < t+1 without a CAS: both would return element t+1.
// No bound on k ≥ 2 or on bottom-top at the thief's read avoids this, since
// the owner may pop any number of elements between the thief's read and its
// CAS. So StealHalf repeats the single-element steal, one CAS per element.
//
// Slots are not cleared after a pop or steal: a ring keeps up to len
// pointers to elements already taken, until they are overwritten. Clearing on
// steal is unsound (the owner may have refilled the slot, possibly with the
// same pointer), so callers that care should drop references held by an
// element once it is taken (for example, nil a task's closure after it runs).

import "sync/atomic"

const (
	// dequeLogCap is the base-2 log of a new deque's capacity: 256 slots,
	// 2 KiB of pointers, enough that a recursive fork-join program rarely
	// grows. A guess, like Go's 256-entry runq.
	dequeLogCap = 8

	// dequeMaxLogCap bounds the logCap given to newDeque (64 Ki slots,
	// 512 KiB): a bigger start buys nothing, the ring grows on demand.
	dequeMaxLogCap = 16

	// dequePad separates the thieves' word (top) from the owner's words
	// (bottom, ring) so a steal does not invalidate the line the owner
	// pushes on. 128 rather than 64 bytes because Intel's spatial prefetcher
	// pulls lines in adjacent pairs (crossbeam-utils' CachePadded does the
	// same).
	dequePad = 128
)

// Deque is a work-stealing deque of non-nil *T: a Chase–Lev deque on a
// growable circular array. One goroutine, the owner, calls Push and Pop;
// any number of goroutines steal through the [Stealer] view returned by
// [Deque.Stealer]. Push, Pop and Steal do not allocate except when Push grows
// the ring.
//
// A Deque must be created by [New] and must not be copied.
type Deque[T any] struct {
	// top is the index of the oldest element. Thieves CAS it forward in
	// Steal; the owner CASes it only in Pop of the last element.
	top atomic.Int64
	_   [dequePad - 8]byte

	// bottom is one past the index of the newest element. Written only by
	// the owner; its store in Push publishes the pushed slot.
	bottom atomic.Int64
	// ring holds the elements. Written only by the owner (Push on growth).
	ring atomic.Pointer[dequeRing[T]]
	// ownerTop is the owner's last-seen top, a lower bound on top (which
	// only grows). Push checks for room against it instead of loading top,
	// so while the ring has room a push does not pull the cache line that
	// thieves write. A plain field: only the owner reads or writes it.
	ownerTop int64
	_        [dequePad - 24]byte
}

// Stealer is the thieves' view of a [Deque]: the same memory, with only the
// methods that any goroutine may call. Obtain it with [Deque.Stealer].
type Stealer[T any] Deque[T]

// dequeRing is a power-of-two circular array of slots.
type dequeRing[T any] struct {
	slots []atomic.Pointer[T]
}

// New returns an empty deque with the default initial capacity.
func New[T any]() *Deque[T] {
	return newDeque[T](dequeLogCap)
}

// newDeque returns an empty deque whose ring starts with 1<<logCap slots;
// tests use a tiny logCap to exercise growth and wraparound. logCap is
// clamped to [0, dequeMaxLogCap].
func newDeque[T any](logCap int) *Deque[T] {
	logCap = min(max(logCap, 0), dequeMaxLogCap)
	d := new(Deque[T])
	d.ring.Store(newDequeRing[T](1 << logCap))
	return d
}

func newDequeRing[T any](n int) *dequeRing[T] {
	return &dequeRing[T]{slots: make([]atomic.Pointer[T], n)}
}

// load returns the element at index i. The slot load pairs with the slot
// store in put (same ring) or in grow's copy (new ring); the caller has
// already loaded bottom > i, which orders this load after that store.
func (r *dequeRing[T]) load(i int64) *T {
	return r.slots[i&int64(len(r.slots)-1)].Load()
}

// put stores x at index i. Owner only.
func (r *dequeRing[T]) put(i int64, x *T) {
	r.slots[i&int64(len(r.slots)-1)].Store(x)
}

// Stealer returns the thieves' view of d. It costs nothing: the view is d.
func (d *Deque[T]) Stealer() *Stealer[T] {
	return (*Stealer[T])(d)
}

// Push adds x at the bottom. Owner only. It grows the ring when full, which
// allocates; otherwise it does not. x must not be nil.
func (d *Deque[T]) Push(x *T) {
	if x == nil {
		panic("deque: Deque.Push: nil element")
	}
	b := d.bottom.Load() // own word: only this goroutine writes it
	r := d.ring.Load()   // own word
	// A stale (smaller) top only makes the ring look fuller than it is; it
	// never lets us overwrite a live slot, since top ≥ ownerTop.
	if b-d.ownerTop >= int64(len(r.slots)) {
		// Looks full: refresh the bound. Pairs with the CAS on top in
		// Steal and Pop.
		t := d.top.Load()
		d.ownerTop = t
		if b-t >= int64(len(r.slots)) {
			r = d.grow(r, t, b)
		}
	}
	r.put(b, x)
	// Store-release in the paper: publishes the slot (and a new ring) to
	// thieves, whose load of bottom in Steal pairs with this store.
	d.bottom.Store(b + 1)
}

// grow copies the live elements [t, b) of r into a ring twice as large and
// publishes it. Owner only. The ring store pairs with the ring load in Steal;
// it precedes the bottom store in Push, so a thief that sees the new bottom
// sees the new ring. Thieves still holding r read correct values from it:
// r is never written again.
func (d *Deque[T]) grow(r *dequeRing[T], t, b int64) *dequeRing[T] {
	nr := newDequeRing[T](2 * len(r.slots))
	for i := t; i < b; i++ {
		nr.put(i, r.load(i))
	}
	d.ring.Store(nr)
	return nr
}

// Pop removes and returns the newest element, or nil if the deque is empty
// or a thief took the last element first. Owner only.
func (d *Deque[T]) Pop() *T {
	b := d.bottom.Load() // own word
	// Fast path for an empty deque: top only grows and only we move bottom,
	// so top ≥ bottom now means empty until our next Push. Saves the two
	// stores below for an idle worker polling its own queue.
	if t := d.top.Load(); t >= b {
		d.ownerTop = t
		return nil
	}
	b--
	r := d.ring.Load() // own word
	// The paper's "store bottom; fence(seq_cst); load top": announce the
	// claim on index b before looking at top. Pairs with Steal's loads of
	// top then bottom: a thief that then reads bottom sees b and will not
	// take index b unless b is also the top (the CAS case below).
	d.bottom.Store(b)
	t := d.top.Load()
	d.ownerTop = t
	if t > b {
		// Thieves emptied the deque between the fast-path check and our
		// claim. Restore bottom = top.
		d.bottom.Store(b + 1)
		return nil
	}
	x := r.load(b) // our own earlier put: only we write slots
	if t == b {
		// The last element: thieves may be taking it. The winner of the
		// CAS on top owns it (pairs with the CAS in Steal).
		if !d.top.CompareAndSwap(t, t+1) {
			x = nil
		}
		// Either way top is now b+1; make the deque empty: bottom = top.
		d.bottom.Store(b + 1)
	}
	return x
}

// Len returns the number of elements, exact when called by the owner with no
// thief active, approximate otherwise (thieves may take elements at any
// moment). Owner only, like Pop; thieves use [Stealer.Len].
func (d *Deque[T]) Len() int {
	return d.Stealer().Len()
}

// capacity returns the current ring size. For tests.
func (d *Deque[T]) capacity() int {
	return len(d.ring.Load().slots)
}

// Len returns an approximate number of elements: a snapshot of bottom-top
// that may be stale by the time it returns. Any goroutine.
func (s *Stealer[T]) Len() int {
	// top first, as in Steal: bottom read second is at least as new, so a
	// stable deque never reads negative; a Pop in progress can, hence max.
	t := s.top.Load()
	b := s.bottom.Load()
	return int(max(b-t, 0))
}

// Steal removes and returns the oldest element. Any goroutine. It returns
// (nil, false) if the deque looked empty and (nil, true) if it lost a race
// for the element to the owner or another thief, in which case a retry may
// succeed (the paper's EMPTY and ABORT). It never blocks and does not
// allocate.
func (s *Stealer[T]) Steal() (x *T, retry bool) {
	// Load top, then bottom: the order matters (see the file comment). The
	// top load pairs with the CAS on top in Steal and Pop; the bottom load
	// pairs with the bottom stores in Push (publishing slot b-1) and Pop
	// (claiming index b).
	t := s.top.Load()
	b := s.bottom.Load()
	if t >= b {
		return nil, false
	}
	// The ring load pairs with the ring store in grow. Either ring holds
	// the right element for index t while top is still t: the owner writes
	// slot t of a ring only after top has passed t, or into a newer ring.
	x = s.ring.Load().load(t)
	// Commit: take index t if nobody (thief, or owner popping the last
	// element) has moved top since we read it. Pairs with the top loads in
	// Push, Pop and Steal.
	if !s.top.CompareAndSwap(t, t+1) {
		return nil, true
	}
	return x, false
}

// StealHalf steals up to half of the elements of s (rounded up), at most
// maxN, one Steal at a time (see the file comment for why not in one CAS).
// It returns the first element stolen, for the caller to run at once, and
// pushes the others, oldest first, onto dst, which must be the caller's own
// deque (Push is owner only) and not the one s views. n counts all the
// elements stolen, first included; n == 0 (first == nil) means s was empty.
// Lost races are retried while s looks non-empty: each one means another
// goroutine made progress. maxN < 1 is treated as 1. Any goroutine; it
// allocates only if dst grows.
func (s *Stealer[T]) StealHalf(dst *Deque[T], maxN int) (first *T, n int) {
	want := 0
	for {
		t := s.top.Load()
		b := s.bottom.Load()
		avail := b - t
		if avail <= 0 {
			return nil, 0
		}
		want = int(min(avail-avail/2, int64(max(maxN, 1))))
		x, retry := s.Steal()
		if x != nil {
			first, n = x, 1
			break
		}
		if !retry {
			return nil, 0
		}
	}
	for n < want {
		x, retry := s.Steal()
		if x == nil {
			if retry {
				continue
			}
			break
		}
		dst.Push(x)
		n++
	}
	return first, n
}
