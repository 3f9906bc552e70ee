package buildgraph

import "math/bits"

// readySet is a set of task positions in [0, n) that finds its smallest
// member at or after a position in O(log₆₄ n): a bitmap with a summary
// bitmap over it, and a summary over that, up to one word (the O(1) Linux
// scheduler's priority bitmap, grown into a tree). The Scheduler keeps its
// ready tasks in one, numbered in scheduling order, so that the next task
// is the first member. A set of a million positions takes 122 KiB at the
// bottom level and 2 KiB above it: it stays in a CPU's L2 cache, where a
// heap of as many tasks would not.
type readySet struct {
	// lv[0] has a bit per position; bit w of lv[k+1] is set when word w of
	// lv[k] is not zero. The last level is one word.
	lv [][]uint64
}

func newReadySet(n int) readySet {
	var s readySet
	for words := max((n+63)/64, 1); ; words = (words + 63) / 64 {
		s.lv = append(s.lv, make([]uint64, words))
		if words == 1 {
			return s
		}
	}
}

// add puts x in the set.
func (s *readySet) add(x int32) {
	i := int(x)
	for k := range s.lv {
		w := &s.lv[k][i>>6]
		was := *w
		*w |= 1 << (i & 63)
		if was != 0 {
			return // the levels above already mark this word
		}
		i >>= 6
	}
}

// remove takes x out of the set.
func (s *readySet) remove(x int32) {
	i := int(x)
	for k := range s.lv {
		w := &s.lv[k][i>>6]
		*w &^= 1 << (i & 63)
		if *w != 0 {
			return
		}
		i >>= 6
	}
}

// has reports whether x is in the set.
func (s *readySet) has(x int32) bool { return s.lv[0][x>>6]&(1<<(x&63)) != 0 }

// next returns the smallest member at or after x, or -1 when there is
// none.
func (s *readySet) next(x int32) int32 {
	i, k := int(x), 0
	for {
		w := i >> 6
		if w >= len(s.lv[k]) {
			return -1
		}
		if word := s.lv[k][w] & (^uint64(0) << (i & 63)); word != 0 {
			i = w<<6 | bits.TrailingZeros64(word)
			break
		}
		// Nothing at or after i in this word: look from the next word on,
		// one level up.
		if k++; k == len(s.lv) {
			return -1
		}
		i = w + 1
	}
	for k > 0 {
		k--
		i = i<<6 | bits.TrailingZeros64(s.lv[k][i])
	}
	return int32(i)
}
