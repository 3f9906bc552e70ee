package memory

import (
	"math"
	"testing"
	"time"
)

// t0 is the fake clock's start; a test's steps are offsets from it.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// job is a running job of need and used MiB, started age before t0.
func job(id int64, need, used int64, age time.Duration) Job {
	return Job{ID: id, Need: need * miB, Used: used * miB, Started: t0.Add(-age)}
}

// frozen is job, frozen.
func frozen(id int64, need, used int64, age time.Duration) Job {
	j := job(id, need, used, age)
	j.Frozen = true
	return j
}

// avail is a sample with a MiB available and no PSI.
func avail(a int64) Sample { return Sample{MemAvailable: a * miB, Available: a * miB} }

// psi is a sample with a MiB available and PSI totals (microseconds).
func psi(a int64, some10, full10 float64, someTotal, fullTotal int64) Sample {
	s := avail(a)
	s.HasPressure = true
	s.Pressure = Pressure{Some10: some10, Full10: full10, SomeTotal: someTotal, FullTotal: fullTotal}
	return s
}

const below = "available memory 80 MiB is below the reserve of 100 MiB"

type planStep struct {
	at         time.Duration
	s          Sample
	jobs       []Job
	want       Plan
	some, full float64 // Policy.Pressure after the step
}

var planTests = []struct {
	name  string
	t     Thresholds
	steps []planStep
}{
	{"no job, room is available less the reserve", Thresholds{Reserve: 100 * miB}, []planStep{
		{s: avail(1000), want: Plan{Room: 900 * miB}},
	}},
	{"the reserve leaves no room: negative, not held", Thresholds{Reserve: 100 * miB}, []planStep{
		{s: avail(100), want: Plan{Room: 0}},
	}},
	{"inside the reserve: hold", Thresholds{Reserve: 100 * miB}, []planStep{
		{s: avail(80), want: Plan{Room: -20 * miB, Hold: true, Why: below}},
		{at: time.Second, s: avail(80), jobs: []Job{job(1, 10, 10, time.Second)}, want: Plan{Room: -20 * miB, Hold: true, Why: below}},
	}},
	{"expected growth of the running jobs is not room", Thresholds{Reserve: 100 * miB}, []planStep{
		// Growth 200 of job 1; job 2 holds more than its need and is
		// expected to grow no more.
		{s: avail(1000), jobs: []Job{job(1, 300, 100, 2*time.Second), job(2, 100, 150, time.Second)}, want: Plan{Room: 700 * miB}},
	}},
	{"the budget bounds the room", Thresholds{Reserve: 100 * miB, Budget: 500 * miB}, []planStep{
		{s: avail(1000), want: Plan{Room: 500 * miB}},
		// Held or expected: 300 + 150.
		{at: time.Second, s: avail(1000), jobs: []Job{job(1, 300, 100, 2*time.Second), job(2, 100, 150, time.Second)}, want: Plan{Room: 50 * miB}},
		// A frozen job's need counts against the budget; the budget
		// bounds admission, not thawing (it never freezes either).
		{at: 2 * time.Second, s: avail(1000), jobs: []Job{job(1, 300, 100, 2*time.Second), frozen(2, 600, 100, time.Second)},
			want: Plan{Room: -400 * miB, Hold: true, Thaw: 2, Why: "its remaining 500 MiB fit"}},
		// Over the budget is no room even with memory to spare.
		{at: 3 * time.Second, s: avail(10000), jobs: []Job{job(1, 600, 100, 2*time.Second)}, want: Plan{Room: -100 * miB}},
	}},
	{"some pressure at the threshold: hold", Thresholds{Reserve: 100 * miB}, []planStep{
		{s: psi(1000, 10, 0, 0, 0), want: Plan{Room: 900 * miB, Hold: true, Why: "memory pressure some 10%"}, some: 10},
	}},
	{"some pressure under the threshold: admit", Thresholds{Reserve: 100 * miB, HoldPressure: 20}, []planStep{
		{s: psi(1000, 19.5, 0, 0, 0), want: Plan{Room: 900 * miB}, some: 19.5},
	}},
	{"a frozen job holds admission", Thresholds{Reserve: 100 * miB}, []planStep{
		// Its remaining 850 MiB do not fit 1000 − 100 − 100.
		{s: avail(1000), jobs: []Job{job(1, 200, 100, 10*time.Second), frozen(2, 900, 50, 5*time.Second)},
			want: Plan{Room: 800 * miB, Hold: true, Why: "1 jobs frozen"}},
	}},
	{"short: freeze the newest of three, then the next, never the oldest", Thresholds{Reserve: 100 * miB, Settle: time.Second}, []planStep{
		{s: avail(80), jobs: []Job{job(3, 100, 50, 5*time.Second), job(1, 100, 50, 20*time.Second), job(2, 100, 50, 10*time.Second)},
			want: Plan{Room: -170 * miB, Hold: true, Freeze: 3, Why: below}},
		// Within the settle time: wait for the freeze to show.
		{at: 500 * time.Millisecond, s: avail(80), jobs: []Job{frozen(3, 100, 50, 5*time.Second), job(1, 100, 50, 20*time.Second), job(2, 100, 50, 10*time.Second)},
			want: Plan{Room: -120 * miB, Hold: true, Why: below}},
		{at: time.Second, s: avail(80), jobs: []Job{frozen(3, 100, 50, 5*time.Second), job(1, 100, 50, 20*time.Second), job(2, 100, 50, 10*time.Second)},
			want: Plan{Room: -120 * miB, Hold: true, Freeze: 2, Why: below}},
		// The oldest runs on, however short memory is.
		{at: 5 * time.Second, s: avail(1), jobs: []Job{frozen(3, 100, 50, 5*time.Second), job(1, 100, 50, 20*time.Second), frozen(2, 100, 50, 10*time.Second)},
			want: Plan{Room: -149 * miB, Hold: true, Why: "available memory 1 MiB is below the reserve of 100 MiB"}},
	}},
	{"equal start times: the larger id is the newer", Thresholds{Reserve: 100 * miB}, []planStep{
		{s: avail(80), jobs: []Job{job(2, 1, 1, time.Second), job(1, 1, 1, time.Second)},
			want: Plan{Room: -20 * miB, Hold: true, Freeze: 2, Why: below}},
	}},
	{"short with one job: it runs", Thresholds{Reserve: 100 * miB}, []planStep{
		{s: avail(80), jobs: []Job{job(1, 100, 50, time.Second)}, want: Plan{Room: -70 * miB, Hold: true, Why: below}},
	}},
	{"emergency: freeze again within the settle time", Thresholds{Reserve: 100 * miB}, []planStep{
		{s: avail(80), jobs: []Job{job(1, 100, 100, 3*time.Second), job(2, 100, 100, 2*time.Second), job(3, 100, 100, time.Second)},
			want: Plan{Room: -20 * miB, Hold: true, Freeze: 3, Why: below}},
		// Less than half the reserve left.
		{at: 100 * time.Millisecond, s: avail(49), jobs: []Job{job(1, 100, 100, 3*time.Second), job(2, 100, 100, 2*time.Second), frozen(3, 100, 100, time.Second)},
			want: Plan{Room: -51 * miB, Hold: true, Freeze: 2, Why: "available memory 49 MiB is below the reserve of 100 MiB"}},
	}},
	{"full pressure: freeze the newest", Thresholds{Reserve: 100 * miB}, []planStep{
		{s: psi(1000, 30, 25, 0, 0), jobs: []Job{job(1, 100, 100, 2*time.Second), job(2, 100, 100, time.Second)},
			want: Plan{Room: 900 * miB, Hold: true, Freeze: 2, Why: "memory pressure full 25%"}, some: 30, full: 25},
	}},
	{"full pressure under the threshold: no freeze", Thresholds{Reserve: 100 * miB, HoldPressure: 50}, []planStep{
		{s: psi(1000, 30, 19, 0, 0), jobs: []Job{job(1, 100, 100, 2*time.Second), job(2, 100, 100, time.Second)},
			want: Plan{Room: 900 * miB}, some: 30, full: 19},
	}},
	{"nothing else runs: thaw the oldest frozen job at once", Thresholds{Reserve: 100 * miB}, []planStep{
		{s: avail(80), jobs: []Job{job(1, 100, 100, 2*time.Second), job(2, 500, 100, time.Second)},
			want: Plan{Room: -420 * miB, Hold: true, Freeze: 2, Why: below}},
		// Job 1 ended; memory is as short, the settle time not over.
		{at: 100 * time.Millisecond, s: avail(80), jobs: []Job{frozen(2, 500, 100, time.Second)},
			want: Plan{Room: -20 * miB, Hold: true, Thaw: 2, Why: "no other job runs"}},
		{at: 200 * time.Millisecond, s: avail(80), jobs: []Job{frozen(4, 100, 100, time.Second), frozen(3, 100, 100, 3*time.Second)},
			want: Plan{Room: -20 * miB, Hold: true, Thaw: 3, Why: "no other job runs"}},
	}},
	{"thaw when the remaining growth fits, after the settle time", Thresholds{Reserve: 100 * miB}, []planStep{
		{s: avail(80), jobs: []Job{job(1, 200, 100, 2*time.Second), job(2, 300, 50, time.Second)},
			want: Plan{Room: -370 * miB, Hold: true, Freeze: 2, Why: below}},
		// Memory is back: 1000 − 100 − job 1's 100 = 800 ≥ 250.
		{at: 100 * time.Millisecond, s: avail(1000), jobs: []Job{job(1, 200, 100, 2*time.Second), frozen(2, 300, 50, time.Second)},
			want: Plan{Room: 800 * miB, Hold: true, Why: "1 jobs frozen"}},
		{at: 500 * time.Millisecond, s: avail(1000), jobs: []Job{job(1, 200, 100, 2*time.Second), frozen(2, 300, 50, time.Second)},
			want: Plan{Room: 800 * miB, Hold: true, Thaw: 2, Why: "its remaining 250 MiB fit"}},
	}},
	{"no thaw while the remaining growth does not fit", Thresholds{Reserve: 100 * miB}, []planStep{
		{s: avail(300), jobs: []Job{job(1, 200, 100, 2*time.Second), frozen(2, 300, 50, time.Second)},
			want: Plan{Room: 100 * miB, Hold: true, Why: "1 jobs frozen"}},
		{at: time.Second, s: avail(350), jobs: []Job{job(1, 200, 100, 2*time.Second), frozen(2, 300, 50, time.Second)},
			want: Plan{Room: 150 * miB, Hold: true, Why: "1 jobs frozen"}},
		{at: 2 * time.Second, s: avail(450), jobs: []Job{job(1, 200, 100, 2*time.Second), frozen(2, 300, 50, time.Second), frozen(3, 10, 5, 500*time.Millisecond)},
			want: Plan{Room: 250 * miB, Hold: true, Thaw: 2, Why: "its remaining 250 MiB fit"}},
	}},
	{"no thaw under some pressure", Thresholds{Reserve: 100 * miB}, []planStep{
		{s: psi(1000, 15, 0, 0, 0), jobs: []Job{job(1, 200, 100, 2*time.Second), frozen(2, 300, 50, time.Second)},
			want: Plan{Room: 800 * miB, Hold: true, Why: "memory pressure some 15%"}, some: 15},
	}},
	{"recent pressure from the PSI totals", Thresholds{Reserve: 100 * miB}, []planStep{
		// The first sample: PSI's own ten-second averages.
		{s: psi(1000, 2, 1, 1_000_000, 500_000), want: Plan{Room: 900 * miB}, some: 2, full: 1},
		// Stalled 500 ms of the last second: 50%, whatever avg10 says.
		{at: time.Second, s: psi(1000, 2, 1, 1_500_000, 500_000), jobs: []Job{job(1, 1, 1, time.Second)},
			want: Plan{Room: 900 * miB, Hold: true, Why: "memory pressure some 50%"}, some: 50},
		// No stall for 100 ms: a decaying average, a tenth of the way.
		{at: 1100 * time.Millisecond, s: psi(1000, 5, 1, 1_500_000, 500_000), jobs: []Job{job(1, 1, 1, time.Second)},
			want: Plan{Room: 900 * miB, Hold: true, Why: "memory pressure some 45%"}, some: 45},
		// Stalled all of the next 100 ms, every task: some 50.5, full 10.
		{at: 1200 * time.Millisecond, s: psi(1000, 5, 1, 1_600_000, 600_000), jobs: []Job{job(1, 1, 1, time.Second)},
			want: Plan{Room: 900 * miB, Hold: true, Why: "memory pressure some 50%"}, some: 50.5, full: 10},
		// A second at 30% full stalls: over the freeze threshold.
		{at: 2200 * time.Millisecond, s: psi(1000, 5, 1, 1_900_000, 900_000), jobs: []Job{job(1, 1, 1, 2*time.Second), job(2, 1, 1, time.Second)},
			want: Plan{Room: 900 * miB, Hold: true, Freeze: 2, Why: "memory pressure full 30%"}, some: 30, full: 30},
		// Totals that go back (a counter reset) count as no stall.
		{at: 3200 * time.Millisecond, s: psi(1000, 5, 1, 0, 0), want: Plan{Room: 900 * miB}},
		// A sample at the same instant takes PSI's own averages again.
		{at: 3200 * time.Millisecond, s: psi(1000, 5, 1, 0, 0), want: Plan{Room: 900 * miB}, some: 5, full: 1},
		// No PSI: no pressure.
		{at: 4 * time.Second, s: avail(1000), want: Plan{Room: 900 * miB}},
	}},
}

func TestPolicyPlan(t *testing.T) {
	for _, tt := range planTests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPolicy(tt.t)
			for i, st := range tt.steps {
				got := p.Plan(t0.Add(st.at), st.s, st.jobs)
				if got != st.want {
					t.Errorf("step %d (at %v): Plan =\n%+v\nwant\n%+v", i, st.at, got, st.want)
				}
				some, full := p.Pressure()
				if math.Abs(some-st.some) > 1e-9 || math.Abs(full-st.full) > 1e-9 {
					t.Errorf("step %d (at %v): Pressure() = %v, %v; want %v, %v", i, st.at, some, full, st.some, st.full)
				}
			}
		})
	}
}

// TestPolicyReserve: a reserve not given is a sixteenth of the tighter of
// the limit and the memory available at the first plan, within
// [32 MiB, 512 MiB], and stays as it is.
func TestPolicyReserve(t *testing.T) {
	tests := []struct {
		s    Sample
		want int64
	}{
		{Sample{Available: 4 * giB}, 256 * miB},
		{Sample{Available: 64 * giB}, 512 * miB},
		{Sample{Available: 4 * giB, Limit: 2 * giB}, 128 * miB},
		{Sample{Available: 1 * giB, Limit: 2 * giB}, 64 * miB},
		{Sample{Available: 4 * giB, Limit: 256 * miB}, 32 * miB},
		{Sample{}, 32 * miB},
	}
	for _, tt := range tests {
		p := NewPolicy(Thresholds{Budget: giB})
		if p.Reserve() != 0 || p.Budget() != giB {
			t.Errorf("before the first plan: Reserve %d Budget %d", p.Reserve(), p.Budget())
		}
		p.Plan(t0, tt.s, nil)
		p.Plan(t0.Add(time.Second), Sample{Available: 100 * giB}, nil)
		if p.Reserve() != tt.want {
			t.Errorf("sample %+v: Reserve() = %d MiB; want %d MiB", tt.s, p.Reserve()>>20, tt.want>>20)
		}
	}
	if p := NewPolicy(Thresholds{Reserve: 7}); p.Reserve() != 7 {
		t.Errorf("given reserve: %d", p.Reserve())
	}
}

// TestPolicyDefaults: zero thresholds hold at some 10%, freeze at full
// 20% and settle 500 ms.
func TestPolicyDefaults(t *testing.T) {
	p := NewPolicy(Thresholds{Reserve: 100 * miB})
	two := []Job{job(1, 1, 1, 2*time.Second), job(2, 1, 1, time.Second)}
	if got := p.Plan(t0, psi(1000, 9.9, 19.9, 0, 0), two); got.Hold || got.Freeze != 0 {
		t.Errorf("some 9.9%%, full 19.9%%: %+v", got)
	}
	p = NewPolicy(Thresholds{Reserve: 100 * miB})
	if got := p.Plan(t0, psi(1000, 10, 20, 0, 0), two); !got.Hold || got.Freeze != 2 {
		t.Errorf("some 10%%, full 20%%: %+v", got)
	}
	three := []Job{job(1, 1, 1, 3*time.Second), job(2, 1, 1, 2*time.Second), job(3, 1, 1, time.Second)}
	p = NewPolicy(Thresholds{Reserve: 100 * miB})
	p.Plan(t0, avail(80), three)
	if got := p.Plan(t0.Add(499*time.Millisecond), avail(80), three); got.Freeze != 0 {
		t.Errorf("499 ms after a freeze: %+v", got)
	}
	if got := p.Plan(t0.Add(500*time.Millisecond), avail(80), three); got.Freeze != 3 {
		t.Errorf("500 ms after a freeze: %+v", got)
	}
}

func TestPlanFitsTake(t *testing.T) {
	p := Plan{Room: 100}
	if !p.Fits(100, 1) || p.Fits(101, 1) || !p.Fits(1000, 0) {
		t.Errorf("Fits on %+v", p)
	}
	p.Take(30)
	if p.Room != 70 || p.Fits(71, 2) {
		t.Errorf("after Take(30): %+v", p)
	}
	held := Plan{Room: 100, Hold: true}
	if held.Fits(1, 1) || !held.Fits(1, 0) {
		t.Errorf("Fits on %+v", held)
	}
	u := Plan{Room: Unlimited}
	u.Take(1 << 40)
	if u.Room != Unlimited || !u.Fits(1<<50, 5) {
		t.Errorf("unlimited after Take: %+v", u)
	}
}
