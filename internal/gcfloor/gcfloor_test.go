package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		live, floor uint64
		base, want  int
	}{
		{live: 4 << 20, floor: 32 << 20, base: 100, want: 700},
		{live: 16 << 20, floor: 32 << 20, base: 100, want: 100}, // twice the live heap is the floor
		{live: 64 << 20, floor: 32 << 20, base: 100, want: 100},
		{live: 0, floor: 32 << 20, base: 100, want: 800},        // 1 MiB × 9, and the minimum heap at 800 is 32 MiB
		{live: 2 << 20, floor: 16 << 20, base: 100, want: 400},  // not 700, whose minimum heap is 28 MiB
		{live: 8 << 20, floor: 32 << 20, base: 300, want: 300},  // the program's GOGC reaches it
		{live: 10 << 20, floor: 32 << 20, base: 200, want: 220}, // 10 MiB × 3.2
	} {
		if got := percent(c.live, c.floor, c.base); got != c.want {
			t.Errorf("percent(%d MiB, %d MiB, %d) = %d, want %d", c.live>>20, c.floor>>20, c.base, got, c.want)
		}
	}
}

// cycles returns the number of completed GC cycles.
func cycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// churn allocates n bytes of short-lived garbage in 1 KiB pieces and
// returns how many collections ran meanwhile.
func churn(n int) uint64 {
	before := cycles()
	var keep []byte
	for range n >> 10 {
		keep = make([]byte, 1<<10)
	}
	runtime.KeepAlive(keep)
	return cycles() - before
}

func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// A program whose live heap is small collects far less often under a
// 64 MiB floor, and stop puts its GOGC back.
func TestKeep(t *testing.T) {
	t.Setenv("GOGC", "") // put back after the test
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	before := gcPercent()
	runtime.GC()
	without := churn(48 << 20)

	stop := Keep(64 << 20)
	runtime.GC() // the goal follows from this cycle's live heap
	with := churn(48 << 20)
	if got := gcPercent(); got <= before {
		t.Errorf("GOGC %d under the floor, want above the program's %d", got, before)
	}
	stop()
	if got := gcPercent(); got != before {
		t.Errorf("GOGC %d after stop, want the program's %d", got, before)
	}
	t.Logf("collections during 48 MiB of garbage: %d without a floor, %d with 64 MiB", without, with)
	if with > 1 || without < 4 {
		t.Errorf("collections during 48 MiB of garbage: %d without a floor, %d with 64 MiB; want at least 4 and at most 1", without, with)
	}
}

// A GOGC in the environment is the user's: Keep changes nothing.
func TestKeepLeavesGOGC(t *testing.T) {
	t.Setenv("GOGC", "100")
	before := gcPercent()
	stop := Keep(64 << 20)
	defer stop()
	runtime.GC()
	if got := gcPercent(); got != before {
		t.Errorf("GOGC %d with GOGC=100 in the environment, want the program's %d", got, before)
	}
}
