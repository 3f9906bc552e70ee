package runtime

import (
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkParallelForGrain compares ParallelFor with grain 0 (it picks
// its chunks) against hand-picked grains and a serial loop, on one worker
// per usable CPU:
//
//	sum     a sum of 100M int64 (800 MB), memory bound
//	varied  100k indices whose cost grows linearly 100-fold from the first
//	        to the last (about 4 ns to 400 ns each), so that equal halves
//	        of the range are far from equal halves of the work
//
// An op is one round: every contender once, in an order that rotates from
// round to round, each timed (wall) inside a task. It reports each
// contender's median (name-ns), the median per-round ratio of grain 0 to
// the hand-picked grain with the lowest median (auto/best, and which one,
// best-grain), and serial/auto, the speed-up over the serial loop, in
// wall time and in busy time (serial/auto-busy: wall time less the least
// run-queue wait of the threads that ran it, from schedstat, as in
// BenchmarkFibFloor), which leaves out other programs' use of the CPUs:
//
//	go test -run '^$' -bench ParallelForGrain -benchtime 15x ./runtime
func BenchmarkParallelForGrain(b *testing.B) {
	b.Run("sum", func(b *testing.B) {
		xs := make([]int64, 100_000_000)
		for i := range xs {
			xs[i] = int64(i)
		}
		benchGrains(b, len(xs), []int{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20}, func(lo, hi int) int64 {
			var s int64
			for _, x := range xs[lo:hi] {
				s += x
			}
			return s
		})
	})
	b.Run("varied", func(b *testing.B) {
		const n = 100_000
		benchGrains(b, n, []int{16, 64, 256, 1 << 10, 4 << 10}, func(lo, hi int) int64 {
			var s int64
			for i := lo; i < hi; i++ {
				s += spinUnits(1 + 99*i/n)
			}
			return s
		})
	})
}

// spinUnits does k units of about 4 ns of arithmetic and returns a value
// that depends on all of it.
func spinUnits(k int) int64 {
	x := uint64(k) | 1
	for range 4 * k {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return int64(x & 1)
}

// benchGrains runs one round of body over [0, n) per op: serially, with
// ParallelFor at grain 0, and at each of grains; see
// BenchmarkParallelForGrain.
func benchGrains(b *testing.B, n int, grains []int, body func(lo, hi int) int64) {
	rt := benchRuntime(b, 0)
	type contender struct {
		name  string
		grain int // -1: serial
	}
	cs := []contender{{"serial", -1}, {"auto", 0}}
	for _, g := range grains {
		cs = append(cs, contender{"grain" + strconv.Itoa(g), g})
	}
	want := body(0, n)
	tids := workerTIDs(b, rt)
	times := make([][]float64, len(cs))
	busy := make([][]float64, len(cs))
	round := 0
	for b.Loop() {
		for k := range cs {
			i := (k + round) % len(cs)
			var got int64
			var took, waited time.Duration
			inTask(b, rt, func(c *Ctx) error {
				w0 := runQueueWaits(tids)
				t0 := time.Now()
				defer func() {
					took = time.Since(t0)
					// The least run-queue wait of the threads that ran
					// it: its own for the serial loop, any worker's
					// otherwise (see BenchmarkFibFloor's busy time).
					waited = took
					for j, w := range runQueueWaits(tids) {
						if cs[i].grain >= 0 || j == c.Worker() {
							waited = min(waited, time.Duration(w-w0[j]))
						}
					}
				}()
				if cs[i].grain < 0 {
					got = body(0, n)
					return nil
				}
				var parts sumParts
				err := c.ParallelFor(0, n, cs[i].grain, func(c *Ctx, lo, hi int) error {
					parts.add(c.Worker(), body(lo, hi))
					return nil
				})
				got = parts.total()
				return err
			})
			if got != want {
				b.Fatalf("%s: got %d, want %d", cs[i].name, got, want)
			}
			times[i] = append(times[i], float64(took))
			busy[i] = append(busy[i], float64(took-waited))
		}
		round++
	}
	meds := make([]float64, len(cs))
	for i := range cs {
		meds[i] = median(slices.Clone(times[i]))
		b.ReportMetric(meds[i], cs[i].name+"-ns")
	}
	best := 2
	for i := 3; i < len(cs); i++ {
		if meds[i] < meds[best] {
			best = i
		}
	}
	var vsBest, speedup, busySpeedup []float64
	for r := range times[0] {
		vsBest = append(vsBest, times[1][r]/times[best][r])
		speedup = append(speedup, times[0][r]/times[1][r])
		busySpeedup = append(busySpeedup, busy[0][r]/busy[1][r])
	}
	b.ReportMetric(median(vsBest), "auto/best")
	b.ReportMetric(float64(cs[best].grain), "best-grain")
	b.ReportMetric(median(speedup), "serial/auto")
	b.ReportMetric(median(busySpeedup), "serial/auto-busy")
}

// sumParts adds up per-worker partial sums, each on its own cache line.
type sumParts struct {
	p [64]struct {
		s int64
		_ [120]byte
	}
}

func (s *sumParts) add(worker int, v int64) { s.p[worker%len(s.p)].s += v }

func (s *sumParts) total() int64 {
	var t int64
	for i := range s.p {
		t += s.p[i].s
	}
	return t
}
