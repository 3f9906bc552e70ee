package affinity

import (
	"math/bits"
	"unsafe"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// The kernel reads and writes CPU and node masks as arrays of unsigned long
// (bits.UintSize bits each, bit b of word w = number w*UintSize+b), so these
// helpers build []uint rather than reuse cpuset's []uint64: the two differ
// on 32-bit big-endian systems.

// kernelMask returns s as an unsigned long array just long enough for its
// largest member. s must not be empty.
func kernelMask(s cpuset.Set) []uint {
	m := make([]uint, s.Last()/bits.UintSize+1)
	for id := range s.All() {
		m[id/bits.UintSize] |= 1 << (id % bits.UintSize)
	}
	return m
}

// setFromMask is the inverse of kernelMask.
func setFromMask(m []uint) cpuset.Set {
	var s cpuset.Set
	for i, w := range m {
		for w != 0 {
			s.Add(i*bits.UintSize + bits.TrailingZeros(w))
			w &= w - 1
		}
	}
	return s
}

// maskBytes is the size of m in bytes, as the system calls want it.
func maskBytes(m []uint) uintptr { return uintptr(len(m)) * unsafe.Sizeof(uint(0)) }
