package buildgraph

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// checkReadySet applies ops to a readySet of n positions and to a plain
// sorted set, and fails at the first next or has that disagree. Each op is
// two bytes: what (add, remove, next) and where.
func checkReadySet(t *testing.T, n int, ops []byte) {
	t.Helper()
	s := newReadySet(n)
	var ref []int32 // sorted members
	for k := 0; k+1 < len(ops) && n > 0; k += 2 {
		x := int32(int(ops[k+1]) * 7919 % n)
		if ops[k]&1 == 1 {
			x = int32(int(ops[k+1]) % n) // the low positions, often
		}
		j, in := slices.BinarySearch(ref, x)
		switch ops[k] % 3 {
		case 0:
			if !in {
				s.add(x)
				ref = slices.Insert(ref, j, x)
			}
		case 1:
			if in {
				s.remove(x)
				ref = slices.Delete(ref, j, j+1)
			}
		}
		want := int32(-1)
		if j < len(ref) {
			want = ref[j]
		}
		if got := s.next(x); got != want {
			t.Fatalf("n=%d, members %v: next(%d) = %d, want %d", n, ref, x, got, want)
		}
		if got := s.has(x); got != slices.Contains(ref, x) {
			t.Fatalf("n=%d, members %v: has(%d) = %v", n, ref, x, got)
		}
	}
	// Walk all members in order, as nextLocked does.
	var walk []int32
	for x := s.next(0); x >= 0; x = s.next(x + 1) {
		walk = append(walk, x)
	}
	if !slices.Equal(walk, ref) && !(len(walk) == 0 && len(ref) == 0) {
		t.Fatalf("n=%d: walk %v, members %v", n, walk, ref)
	}
}

// TestReadySet checks the set against a sorted slice at sizes around its
// levels' word boundaries.
func TestReadySet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 63, 64, 65, 4095, 4096, 4097, 262144, 262145, 300000} {
		ops := make([]byte, 4000)
		for i := range ops {
			ops[i] = byte(r.IntN(256))
		}
		checkReadySet(t, n, ops)
	}
}

// TestReadySetFarMembers finds members many levels apart: the first and
// the last position of a set of a million, and nothing between.
func TestReadySetFarMembers(t *testing.T) {
	const n = 1 << 20
	s := newReadySet(n)
	if len(s.lv) != 4 {
		t.Fatalf("%d levels for %d positions, want 4", len(s.lv), n)
	}
	s.add(0)
	s.add(n - 1)
	if got := s.next(1); got != n-1 {
		t.Errorf("next(1) = %d, want %d", got, n-1)
	}
	s.remove(n - 1)
	if got := s.next(1); got != -1 {
		t.Errorf("next(1) after removing the last = %d, want -1", got)
	}
	if got := s.next(0); got != 0 {
		t.Errorf("next(0) = %d, want 0", got)
	}
}

func FuzzReadySet(f *testing.F) {
	f.Add(uint32(100), []byte{0, 5, 0, 70, 1, 5, 2, 0})
	f.Add(uint32(70000), []byte{0, 255, 2, 1, 3, 255, 4, 9})
	f.Fuzz(func(t *testing.T, n uint32, ops []byte) {
		checkReadySet(t, int(n%300000)+1, ops)
	})
}
