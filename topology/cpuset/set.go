// Package cpuset holds sets of CPU (or NUMA node) numbers and the parsers for
// the three ways Linux writes them: cpulist ("0-3,8-11"), cpumap/bitmask
// ("ff,0000000f") and the raw bitmasks of sched_getaffinity.
//
// A Set is a value: the zero Set is empty and ready to use, and the methods
// that combine sets return new sets instead of changing their operands. Only
// Add and Remove change the receiver.
package cpuset

import (
	"iter"
	"math/bits"
	"strconv"
	"strings"
)

// Set is a set of non-negative integers, normally CPU or NUMA node numbers.
type Set struct {
	// words[i] bit b holds number 64*i+b. Every constructor and combinator
	// allocates its own words, so two Sets never share them unless one was
	// copied by assignment: a Set assigned to another variable and then
	// changed with Add or Remove may change the copy too (use Clone).
	words []uint64
}

// Of returns the set holding ids. It panics on a negative id, which is a
// programming error rather than bad input.
func Of(ids ...int) Set {
	var s Set
	for _, id := range ids {
		s.Add(id)
	}
	return s
}

// Range returns the set {lo, lo+1, ..., hi}; it is empty when hi < lo.
func Range(lo, hi int) Set {
	var s Set
	for i := lo; i <= hi; i++ {
		s.Add(i)
	}
	return s
}

// Add puts id into s.
func (s *Set) Add(id int) {
	if id < 0 {
		panic("cpuset: Add: negative id " + strconv.Itoa(id))
	}
	w := id / 64
	if w >= len(s.words) {
		// append grows geometrically, so adding increasing ids is linear
		// overall; words past len are always zero (never truncated).
		s.words = append(s.words, make([]uint64, w+1-len(s.words))...)
	}
	s.words[w] |= 1 << uint(id%64)
}

// Remove takes id out of s.
func (s *Set) Remove(id int) {
	if id < 0 || id/64 >= len(s.words) {
		return
	}
	s.words[id/64] &^= 1 << uint(id%64)
}

// Contains reports whether id is in s.
func (s Set) Contains(id int) bool {
	if id < 0 || id/64 >= len(s.words) {
		return false
	}
	return s.words[id/64]&(1<<uint(id%64)) != 0
}

// Len returns the number of members.
func (s Set) Len() int {
	n := 0
	for _, w := range s.words {
		n += bits.OnesCount64(w)
	}
	return n
}

// IsEmpty reports whether s has no members.
func (s Set) IsEmpty() bool {
	for _, w := range s.words {
		if w != 0 {
			return false
		}
	}
	return true
}

// First returns the smallest member, or -1 when s is empty.
func (s Set) First() int { return s.Next(0) }

// Last returns the largest member, or -1 when s is empty.
func (s Set) Last() int {
	for i := len(s.words) - 1; i >= 0; i-- {
		if w := s.words[i]; w != 0 {
			return i*64 + 63 - bits.LeadingZeros64(w)
		}
	}
	return -1
}

// Next returns the smallest member >= from, or -1 when there is none.
func (s Set) Next(from int) int {
	if from < 0 {
		from = 0
	}
	i := from / 64
	if i >= len(s.words) {
		return -1
	}
	w := s.words[i] >> uint(from%64)
	if w != 0 {
		return from + bits.TrailingZeros64(w)
	}
	for i++; i < len(s.words); i++ {
		if s.words[i] != 0 {
			return i*64 + bits.TrailingZeros64(s.words[i])
		}
	}
	return -1
}

// All yields the members in increasing order.
func (s Set) All() iter.Seq[int] {
	return func(yield func(int) bool) {
		for id := s.Next(0); id >= 0; id = s.Next(id + 1) {
			if !yield(id) {
				return
			}
		}
	}
}

// IDs returns the members in increasing order. It never returns nil, so an
// empty set encodes as [] in JSON.
func (s Set) IDs() []int {
	out := make([]int, 0, s.Len())
	for id := range s.All() {
		out = append(out, id)
	}
	return out
}

// Clone returns a copy of s that shares no memory with it.
func (s Set) Clone() Set {
	if len(s.words) == 0 {
		return Set{}
	}
	return Set{words: append([]uint64(nil), s.words...)}
}

// Union returns s ∪ t.
func (s Set) Union(t Set) Set {
	a, b := s.words, t.words
	if len(a) < len(b) {
		a, b = b, a
	}
	out := append([]uint64(nil), a...)
	for i, w := range b {
		out[i] |= w
	}
	return Set{words: out}
}

// Intersect returns s ∩ t.
func (s Set) Intersect(t Set) Set {
	n := min(len(s.words), len(t.words))
	out := make([]uint64, n)
	for i := range n {
		out[i] = s.words[i] & t.words[i]
	}
	return Set{words: out}
}

// Difference returns s \ t.
func (s Set) Difference(t Set) Set {
	out := append([]uint64(nil), s.words...)
	for i := range min(len(out), len(t.words)) {
		out[i] &^= t.words[i]
	}
	return Set{words: out}
}

// Intersects reports whether s and t have a member in common.
func (s Set) Intersects(t Set) bool {
	for i := range min(len(s.words), len(t.words)) {
		if s.words[i]&t.words[i] != 0 {
			return true
		}
	}
	return false
}

// IsSubsetOf reports whether every member of s is in t.
func (s Set) IsSubsetOf(t Set) bool {
	for i, w := range s.words {
		var tw uint64
		if i < len(t.words) {
			tw = t.words[i]
		}
		if w&^tw != 0 {
			return false
		}
	}
	return true
}

// Equal reports whether s and t have the same members.
func (s Set) Equal(t Set) bool {
	return s.IsSubsetOf(t) && t.IsSubsetOf(s)
}

// String formats s as a Linux cpulist, e.g. "0-3,8,10-11"; the empty set is "".
func (s Set) String() string {
	var b strings.Builder
	id := s.Next(0)
	for id >= 0 {
		end := id
		for s.Contains(end + 1) {
			end++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(id))
		if end > id {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(end))
		}
		id = s.Next(end + 1)
	}
	return b.String()
}

// Words returns s as 64-bit words, bit b of word i standing for 64*i+b, the
// layout of the kernel's cpu_set_t on 64-bit machines. The result is a copy.
func (s Set) Words() []uint64 { return append([]uint64(nil), s.words...) }

// FromWords builds a set from 64-bit words laid out as Words returns them.
func FromWords(words []uint64) Set { return Set{words: append([]uint64(nil), words...)} }
