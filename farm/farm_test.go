package farm

import (
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func hosts(n, slots int) []Host {
	var hs []Host
	for i := range n {
		hs = append(hs, Host{Name: string(rune('a' + i)), Port: DefaultPort, Slots: slots})
	}
	return hs
}

// Equal unmeasured hosts share the jobs: the load term spreads them.
func TestAcquireSpreadsOverEqualHosts(t *testing.T) {
	f := New(hosts(3, 2), Config{})
	var got [3]int
	for range 6 {
		l, ok := f.Acquire(t0)
		if !ok {
			t.Fatal("no slot")
		}
		got[l.Index]++
	}
	if got != [3]int{2, 2, 2} {
		t.Errorf("slots taken per host %v, want 2 each", got)
	}
	if _, ok := f.Acquire(t0); ok {
		t.Error("Acquire succeeded on a full farm")
	}
}

// A host measured faster wins; an unmeasured one is assumed average, so
// it beats a measured slow one.
func TestAcquirePrefersFast(t *testing.T) {
	f := New(hosts(3, 4), Config{})
	now := t0
	fast, _ := f.Acquire(now)
	slow, _ := f.Acquire(now)
	f.Release(fast, Outcome{OK: true, Bytes: 400 << 10, Elapsed: time.Second}, now)
	f.Release(slow, Outcome{OK: true, Bytes: 100 << 10, Elapsed: time.Second}, now)
	l, _ := f.Acquire(now)
	if l.Index != fast.Index {
		t.Errorf("picked host %d, want the fast one %d", l.Index, fast.Index)
	}
	f.Release(l, Outcome{}, now)
	st := f.Stats(now)
	if !(st[fast.Index].Score > st[3-fast.Index-slow.Index].Score && st[3-fast.Index-slow.Index].Score > st[slow.Index].Score) {
		t.Errorf("scores fast %v, unmeasured %v, slow %v: want that order", st[fast.Index].Score, st[3-fast.Index-slow.Index].Score, st[slow.Index].Score)
	}
	if st[fast.Index].Speed != 400<<10 || st[fast.Index].Jobs != 1 {
		t.Errorf("fast host stats %+v", st[fast.Index])
	}
}

// A host fault takes the host down for a back-off that doubles with each
// consecutive failure and resets on success; a compile error does not.
func TestBackoff(t *testing.T) {
	f := New(hosts(1, 1), Config{BackoffBase: time.Second, BackoffMax: 5 * time.Second})
	now := t0
	fail := func() time.Time {
		l, ok := f.Acquire(now)
		if !ok {
			t.Fatalf("host down at %v", now.Sub(t0))
		}
		f.Release(l, Outcome{HostFault: true, Err: errors.New("connection refused")}, now)
		return f.Stats(now)[0].DownUntil
	}
	for _, want := range []time.Duration{1, 2, 4, 5, 5} {
		until := fail()
		if got := until.Sub(now); got != want*time.Second {
			t.Errorf("back-off %v, want %v", got, want*time.Second)
		}
		if _, ok := f.Acquire(until.Add(-time.Millisecond)); ok {
			t.Fatal("Acquire on a host still down")
		}
		now = until
	}
	st := f.Stats(now)[0]
	if st.Failures != 5 || st.LastErr != "connection refused" || st.Down {
		t.Errorf("stats %+v", st)
	}
	l, _ := f.Acquire(now)
	f.Release(l, Outcome{OK: true, Bytes: 1000}, now.Add(time.Second))
	if until := fail(); until.Sub(now) != time.Second {
		t.Errorf("back-off after a success %v, want it reset to 1s", until.Sub(now))
	}
	now = now.Add(time.Hour)
	l, _ = f.Acquire(now)
	f.Release(l, Outcome{}, now) // a compile error: nobody's fault
	if st := f.Stats(now)[0]; st.Down || st.Failures != 6 {
		t.Errorf("a compile error changed the host: %+v", st)
	}
}

// Recent failures lower the score of a host that is up again; the memory
// fades with FailureHalfLife.
func TestFailuresFade(t *testing.T) {
	f := New(hosts(2, 1), Config{BackoffBase: time.Second, FailureHalfLife: time.Minute})
	l, _ := f.Acquire(t0)
	f.Release(l, Outcome{HostFault: true}, t0)
	soon, late := t0.Add(2*time.Second), t0.Add(time.Hour)
	if st := f.Stats(soon); st[l.Index].Score >= st[1-l.Index].Score {
		t.Errorf("failed host scores %v ≥ clean host %v", st[l.Index].Score, st[1-l.Index].Score)
	}
	st := f.Stats(late)
	if d := st[l.Index].Score / st[1-l.Index].Score; d < 0.999 {
		t.Errorf("after an hour the failed host still scores %.3f of the clean one", d)
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	f := New(hosts(64, 16), Config{})
	b.ReportAllocs()
	for i := range b.N {
		l, _ := f.Acquire(t0)
		f.Release(l, Outcome{OK: true, Bytes: 10000, Elapsed: time.Duration(i%7+1) * time.Millisecond}, t0)
	}
}

// Many goroutines acquiring and releasing never overfill a host, and every
// slot comes back.
func TestConcurrentAcquireRelease(t *testing.T) {
	f := New(hosts(4, 3), Config{BackoffBase: time.Microsecond, BackoffMax: time.Microsecond})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				now := time.Now()
				l, ok := f.Acquire(now)
				if !ok {
					continue
				}
				for _, s := range f.Stats(now) {
					if s.Running > s.Host.Slots {
						t.Errorf("host %s runs %d > %d slots", s.Host.Addr(), s.Running, s.Host.Slots)
					}
				}
				f.Release(l, Outcome{OK: (g+i)%5 != 0, HostFault: (g+i)%5 == 0, Bytes: 1000, Elapsed: time.Millisecond}, time.Now())
			}
		}()
	}
	wg.Wait()
	for _, s := range f.Stats(time.Now()) {
		if s.Running != 0 {
			t.Errorf("host %s still holds %d slots", s.Host.Addr(), s.Running)
		}
	}
}

func TestNextUp(t *testing.T) {
	f := New(hosts(2, 1), Config{BackoffBase: time.Second})
	now := time.Unix(1000, 0)
	if _, ok := f.NextUp(now); ok {
		t.Fatal("NextUp with every host up")
	}
	a, _ := f.Acquire(now)
	b, _ := f.Acquire(now)
	f.Release(a, Outcome{HostFault: true}, now)
	f.Release(b, Outcome{HostFault: true}, now.Add(time.Second))
	if up, ok := f.NextUp(now); !ok || !up.Equal(now.Add(time.Second)) {
		t.Errorf("NextUp = %v %v, want the first host's end of back-off", up, ok)
	}
	if up, ok := f.NextUp(now.Add(1500 * time.Millisecond)); !ok || !up.Equal(now.Add(2*time.Second)) {
		t.Errorf("NextUp = %v %v, want the second host's", up, ok)
	}
	if _, ok := f.NextUp(now.Add(time.Minute)); ok {
		t.Error("NextUp once every host is up again")
	}
}
