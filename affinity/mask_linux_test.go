package affinity

import (
	"math/bits"
	"testing"

	"github.com/numasteal/numasteal/topology/cpuset"
)

func TestKernelMaskRoundTrip(t *testing.T) {
	for _, list := range []string{"0", "1", "0-1", "63", "64", "0,63-65", "4095", "0-255", "1,3,5,1000-1023"} {
		s, err := cpuset.Parse(list)
		if err != nil {
			t.Fatal(err)
		}
		m := kernelMask(s)
		if want := s.Last()/bits.UintSize + 1; len(m) != want {
			t.Errorf("kernelMask(%s) has %d words, want %d", list, len(m), want)
		}
		if got := setFromMask(m); !got.Equal(s) {
			t.Errorf("setFromMask(kernelMask(%s)) = %s", list, got)
		}
	}
}
