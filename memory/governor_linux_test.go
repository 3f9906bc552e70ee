package memory

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// govTest is a Governor over a copy of the nomemctl fixture, whose
// available memory the test sets (setAvailable), so that memory runs out
// and comes back when the test says.
type govTest struct {
	t    *testing.T
	root string
	g    *Governor

	mu     sync.Mutex
	events []string // "freeze 2: why", "thaw 2: why"
}

// The thresholds of the governor tests: a reserve of 100 MiB, a short
// settle time, a fast sampler.
var govThresholds = Thresholds{Reserve: 100 * miB, Settle: 20 * time.Millisecond}

func newGovTest(t *testing.T, availMiB int64, o Options) *govTest {
	gt := &govTest{t: t, root: copyFixture(t, "nomemctl")}
	gt.setAvailable(availMiB)
	src, err := Open(gt.root, 0)
	if err != nil {
		t.Fatal(err)
	}
	if o.Interval == 0 {
		o.Interval = 2 * time.Millisecond
	}
	o.Event = func(id int64, froze bool, why string) {
		verb := "thaw"
		if froze {
			verb = "freeze"
		}
		gt.mu.Lock()
		gt.events = append(gt.events, fmt.Sprintf("%s %d: %s", verb, id, why))
		gt.mu.Unlock()
	}
	gt.g = NewGovernor(src, govThresholds, o)
	return gt
}

func (gt *govTest) setAvailable(mib int64) {
	writeFile(gt.t, gt.root, "proc/meminfo", fmt.Sprintf("MemTotal: 8388608 kB\nMemFree: 8388608 kB\nMemAvailable: %d kB\n", mib<<10))
}

// run runs the Governor until the test ends; stop ends it early and
// waits for Run to return.
func (gt *govTest) run() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		gt.g.Run(ctx)
		close(done)
	}()
	stop = func() {
		cancel()
		<-done
	}
	gt.t.Cleanup(stop)
	return stop
}

func (gt *govTest) eventList() []string {
	gt.mu.Lock()
	defer gt.mu.Unlock()
	return append([]string(nil), gt.events...)
}

// TestGovernorFreezesAndThaws: two real job trees run; memory runs out,
// the newest is stopped whole and admission holds; memory comes back and
// it runs again.
func TestGovernorFreezesAndThaws(t *testing.T) {
	gt := newGovTest(t, 1000, Options{})
	gt.run()
	t1 := startTree(t, "sleep 100 & sleep 100 & wait", 2)
	gt.g.Add(1, JobSpec{Need: 10 * miB, Pid: t1.pid})
	t2 := startTree(t, "sleep 100 & sleep 100 & wait", 2)
	gt.g.Add(2, JobSpec{Need: 10 * miB})
	gt.g.SetPid(2, t2.pid)
	eventually(t, "both jobs' memory read", func() bool {
		st := gt.g.Stats()
		return st.Jobs == 2 && st.Used >= TreeRSS("/proc", t1.pid)
	})
	if !gt.g.Admit(10*miB, 2) {
		t.Fatalf("with 1000 MiB available a job of 10 MiB is not admitted: %+v", gt.g.Stats())
	}

	gt.setAvailable(50)
	eventually(t, "job 2's tree stopped", func() bool { return allState(t2.pids, "T", false) })
	if !allState(t1.pids, "T", true) {
		t.Errorf("the oldest job was stopped too")
	}
	st := gt.g.Stats()
	if st.Freezes != 1 || st.Frozen != 1 || st.Holding == "" || st.Reserve != 100*miB {
		t.Errorf("after the freeze: %+v", st)
	}
	if gt.g.Admit(1, 2) {
		t.Error("a job was admitted with memory short and a job frozen")
	}
	// The event follows the stop.
	eventually(t, "the freeze reported", func() bool { return len(gt.eventList()) == 1 })
	if ev := gt.eventList(); ev[0] != "freeze 2: available memory 50 MiB is below the reserve of 100 MiB" {
		t.Errorf("events %q", ev)
	}

	gt.setAvailable(1000)
	eventually(t, "job 2's tree continued", func() bool { return allState(t2.pids, "T", true) })
	eventually(t, "admission open again", func() bool { return gt.g.Stats().Holding == "" })
	if st := gt.g.Stats(); st.Thaws != 1 || st.Frozen != 0 {
		t.Errorf("after the thaw: %+v", st)
	}
	eventually(t, "the thaw reported", func() bool { return len(gt.eventList()) >= 2 })
	if ev := gt.eventList(); len(ev) != 2 || !strings.HasPrefix(ev[1], "thaw 2: its remaining ") {
		t.Errorf("events %q", ev)
	}
	if e := gt.g.Remove(2); e.Peak <= 0 || e.Frozen {
		t.Errorf("Remove(2) = %+v", e)
	}
	if e := gt.g.Remove(1); e.Peak <= 0 {
		t.Errorf("Remove(1) = %+v", e)
	}
}

// TestGovernorRunThawsWhenDone: Run continues every job it froze when its
// context ends.
func TestGovernorRunThawsWhenDone(t *testing.T) {
	gt := newGovTest(t, 1000, Options{})
	stop := gt.run()
	t1 := startTree(t, "sleep 100 & wait", 1)
	t2 := startTree(t, "sleep 100 & sleep 100 & wait", 2)
	t3 := startTree(t, "sleep 100 & wait", 1)
	for i, tr := range []*tree{t1, t2, t3} {
		gt.g.Add(int64(i+1), JobSpec{Need: miB, Pid: tr.pid})
	}
	// Less than half the reserve: a freeze at every sample until only
	// the oldest runs.
	gt.setAvailable(10)
	eventually(t, "jobs 2 and 3 stopped", func() bool {
		return allState(t2.pids, "T", false) && allState(t3.pids, "T", false)
	})
	stop()
	for _, tr := range []*tree{t1, t2, t3} {
		if !allState(tr.pids, "T", true) {
			t.Errorf("after Run returned, tree %v is stopped", tr.pids)
		}
	}
	if st := gt.g.Stats(); st.Frozen != 0 || st.Freezes != 2 || st.Thaws != 0 {
		t.Errorf("after Run returned: %+v", st)
	}
}

// TestGovernorContinuesSignalledJob: a frozen job that is sent SIGTERM
// (make's, or the user's) is continued so that it dies, and is never
// frozen again.
func TestGovernorContinuesSignalledJob(t *testing.T) {
	gt := newGovTest(t, 1000, Options{})
	gt.run()
	t1 := startTree(t, "exec sleep 100", 0)
	t2 := startTree(t, "exec sleep 100", 0)
	gt.g.Add(1, JobSpec{Need: miB, Pid: t1.pid})
	gt.g.Add(2, JobSpec{Need: miB, Pid: t2.pid})
	gt.setAvailable(50)
	eventually(t, "job 2 stopped", func() bool { return procState(t2.pid) == "T" })
	syscall.Kill(t2.pid, syscall.SIGTERM)
	select {
	case err := <-t2.done:
		if !diedOf(err, syscall.SIGTERM) {
			t.Errorf("job 2 ended with %v; want SIGTERM", err)
		}
		t2.done <- err
	case <-time.After(deadline):
		t.Fatalf("job 2, frozen and sent SIGTERM, did not end in %v (state %q)", deadline, procState(t2.pid))
	}
	// Memory is as short as it was; the dying job is not frozen again.
	e := gt.g.Remove(2)
	if st := gt.g.Stats(); st.Freezes != 1 || st.Thaws != 1 || e.Frozen {
		t.Errorf("after the SIGTERM: %+v, Remove = %+v", st, e)
	}
	if procState(t1.pid) == "T" {
		t.Error("job 1 was stopped")
	}
	gt.g.Remove(1)
}

// TestGovernorAdmitActsOnItsPlan: when Admit makes a fresh plan (the
// last is older than the interval) and the plan freezes a job, the job
// is frozen: a plan's freeze is not lost for having been made by Admit.
func TestGovernorAdmitActsOnItsPlan(t *testing.T) {
	gt := newGovTest(t, 1000, Options{Interval: time.Nanosecond})
	t1 := startTree(t, "exec sleep 100", 0)
	t2 := startTree(t, "exec sleep 100", 0)
	gt.g.Add(1, JobSpec{Need: miB, Pid: t1.pid})
	gt.g.Add(2, JobSpec{Need: miB, Pid: t2.pid})
	gt.setAvailable(50)
	if gt.g.Admit(miB, 2) {
		t.Error("admitted with memory short")
	}
	eventually(t, "job 2 stopped", func() bool { return procState(t2.pid) == "T" })
	if st := gt.g.Stats(); st.Freezes != 1 || st.Frozen != 1 {
		t.Errorf("after Admit's plan: %+v", st)
	}
	// Admit's caller may hold the lock its Event callback takes: the
	// freeze is reported by Run, not by Admit.
	if ev := gt.eventList(); len(ev) != 0 {
		t.Errorf("Admit reported %q itself", ev)
	}
	if e := gt.g.Remove(2); !e.Frozen {
		t.Errorf("Remove(2) = %+v", e)
	}
	eventually(t, "job 2 continued by Remove", func() bool { return procState(t2.pid) != "T" })
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { gt.g.Run(ctx); close(ran) }()
	eventually(t, "the freeze reported by Run", func() bool { return len(gt.eventList()) >= 1 })
	if ev := gt.eventList(); !strings.HasPrefix(ev[0], "freeze 2: ") {
		t.Errorf("events %q", ev)
	}
	cancel()
	<-ran
	gt.g.Remove(1)
}

// TestGovernorOOMBase: a job's OOM-kill base is the count when it
// started, read afresh, not the last sample's (none before the first).
func TestGovernorOOMBase(t *testing.T) {
	gt := newGovTest(t, 1000, Options{})
	// The fixture's vmstat says 2 OOM kills so far.
	gt.g.Add(1, JobSpec{Need: miB})
	e := gt.g.Remove(1)
	if e.OOMKills != 2 || gt.g.OOMKilledSince(e.OOMKills) {
		t.Errorf("Remove(1) = %+v, OOMKilledSince = %v; want base 2 and no kill since", e, gt.g.OOMKilledSince(e.OOMKills))
	}
	gt.g.Add(2, JobSpec{Need: miB})
	writeFile(t, gt.root, "proc/vmstat", "pgfault 1\noom_kill 3\n")
	e = gt.g.Remove(2)
	if e.OOMKills != 2 || !gt.g.OOMKilledSince(e.OOMKills) {
		t.Errorf("after an OOM kill: Remove(2) = %+v, OOMKilledSince = %v", e, gt.g.OOMKilledSince(e.OOMKills))
	}
	gt.g.Add(3, JobSpec{Need: miB})
	if e := gt.g.Remove(3); e.OOMKills != 3 {
		t.Errorf("Remove(3) = %+v; want base 3", e)
	}
}

// TestGovernorJobZero: job ids are the owner's; 0 is one like any other
// and is not frozen for the plan's "no job".
func TestGovernorJobZero(t *testing.T) {
	var mu sync.Mutex
	changed := 0
	gt := newGovTest(t, 1000, Options{Changed: func() {
		mu.Lock()
		changed++
		mu.Unlock()
	}})
	gt.run()
	t0 := startTree(t, "exec sleep 100", 0)
	t1 := startTree(t, "exec sleep 100", 0)
	gt.g.Add(0, JobSpec{Need: miB, Pid: t0.pid})
	gt.g.Add(1, JobSpec{Need: miB, Pid: t1.pid})
	eventually(t, "ten samples with room", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return changed >= 10
	})
	if st := gt.g.Stats(); st.Freezes != 0 || st.Thaws != 0 || procState(t0.pid) == "T" {
		t.Errorf("with memory to spare: %+v, job 0 in state %q, events %q", st, procState(t0.pid), gt.eventList())
	}
	gt.g.Remove(0)
	gt.g.Remove(1)
}

// TestGovernorSpecCallbacks: a job's memory read by its Usage and frozen
// by its Freeze (a cgroup's, for an owner that has one).
func TestGovernorSpecCallbacks(t *testing.T) {
	gt := newGovTest(t, 1000, Options{})
	gt.run()
	var mu sync.Mutex
	var calls []bool
	gt.g.Add(1, JobSpec{Need: 100 * miB, Usage: func() int64 { return 300 * miB }, Freeze: func(bool) error { return nil }})
	gt.g.Add(2, JobSpec{Need: 100 * miB, Usage: func() int64 { return 200 * miB }, Freeze: func(stop bool) error {
		mu.Lock()
		calls = append(calls, stop)
		mu.Unlock()
		return nil
	}})
	eventually(t, "both jobs' usage read", func() bool { return gt.g.Stats().Used == 500*miB })
	gt.setAvailable(10)
	eventually(t, "job 2 frozen", func() bool { return gt.g.Stats().Frozen == 1 })
	e := gt.g.Remove(2)
	e.Available = 0 // whatever the last sample before the job said
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(calls) != "[true false]" || e != (Ended{Peak: 200 * miB, OOMKills: 2, Frozen: true}) {
		t.Errorf("Freeze calls %v, Remove = %+v", calls, e)
	}
	gt.g.Remove(1)
}

// TestGovernorStress: owners add, admit, update and remove jobs from many
// goroutines while memory runs out and comes back every few samples;
// every job that was frozen is continued by the end (a freeze decided as
// a job is removed comes before Remove's continue, never after), and
// the counters agree.
func TestGovernorStress(t *testing.T) {
	gt := newGovTest(t, 1000, Options{Interval: time.Millisecond})
	gt.g.pol = NewPolicy(Thresholds{Reserve: 100 * miB, Settle: time.Microsecond})
	stop := gt.run()

	const workers, jobsEach = 8, 200
	type calls struct {
		mu   sync.Mutex
		last []bool
	}
	all := make([]*calls, workers*jobsEach)
	var wg sync.WaitGroup
	quit := make(chan struct{})
	var flips sync.WaitGroup
	flips.Add(1)
	go func() {
		defer flips.Done()
		for i := 0; ; i++ {
			select {
			case <-quit:
				return
			default:
			}
			gt.setAvailable([]int64{1000, 10, 400, 60}[i%4])
			time.Sleep(time.Millisecond)
		}
	}()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < jobsEach; j++ {
				id := int64(w*jobsEach + j)
				c := &calls{}
				all[id] = c
				gt.g.Admit(miB, 1+j%3)
				gt.g.Add(id, JobSpec{Need: miB, Usage: func() int64 { return miB }, Freeze: func(stop bool) error {
					c.mu.Lock()
					c.last = append(c.last, stop)
					c.mu.Unlock()
					return nil
				}})
				gt.g.SetPid(id, 1<<30) // no such process: signalPending reads nothing
				_ = gt.g.Peak(id)
				gt.g.Stats()
				for k := 0; k < j%4; k++ {
					time.Sleep(100 * time.Microsecond)
				}
				gt.g.Remove(id)
			}
		}()
	}
	wg.Wait()
	close(quit)
	flips.Wait()
	stop()
	st := gt.g.Stats()
	if st.Jobs != 0 || st.Frozen != 0 || st.Used != 0 {
		t.Errorf("after every job was removed: %+v", st)
	}
	frozen := 0
	for id, c := range all {
		c.mu.Lock()
		if n := len(c.last); n > 0 {
			frozen++
			if c.last[n-1] {
				t.Errorf("job %d: Freeze calls %v end stopped", id, c.last)
			}
		}
		c.mu.Unlock()
	}
	t.Logf("%d of %d jobs frozen at least once; %d freezes, %d thaws", frozen, len(all), st.Freezes, st.Thaws)
}

// TestGovernorStatsIdle: a Governor that watches no job, and so does not
// sample on its own, still shows the memory as it is now, before its
// first job and after a change.
func TestGovernorStatsIdle(t *testing.T) {
	gt := newGovTest(t, 700, Options{})
	if st := gt.g.Stats(); st.Sample.MemAvailable != 700*miB || st.Sample.At.IsZero() {
		t.Fatalf("idle Governor, before any job: MemAvailable %d MiB at %v, want 700 MiB now", st.Sample.MemAvailable/miB, st.Sample.At)
	}
	gt.setAvailable(500)
	eventually(t, "Stats to show 500 MiB available", func() bool { return gt.g.Stats().Sample.MemAvailable == 500*miB })
}

// TestGovernorInterval: the time between samples follows the memory left
// beyond the reserve at 6000 MiB/s, within 1 to 10 intervals; a quarter
// interval when less than four reserves are left; one interval while
// admission holds or a job is frozen.
func TestGovernorInterval(t *testing.T) {
	gt := newGovTest(t, 1000, Options{Interval: 100 * time.Millisecond})
	g := gt.g
	for _, c := range []struct {
		availMiB int64
		want     time.Duration
	}{
		{300, 25 * time.Millisecond},    // under four reserves of 100 MiB
		{500, 100 * time.Millisecond},   // 400 MiB last 67 ms
		{1000, 150 * time.Millisecond},  // 900 MiB last 150 ms
		{8000, 1000 * time.Millisecond}, // 7900 MiB last 1.3 s
	} {
		gt.setAvailable(c.availMiB)
		g.mu.Lock()
		g.sampleLocked(time.Now())
		got := g.intervalLocked()
		g.mu.Unlock()
		if got != c.want {
			t.Errorf("%d MiB available: interval %v, want %v", c.availMiB, got, c.want)
		}
	}
	g.mu.Lock()
	g.plan.Hold = true
	if got := g.intervalLocked(); got != 100*time.Millisecond {
		t.Errorf("admission holding: interval %v, want 100ms", got)
	}
	g.plan.Hold = false
	g.jobs[1] = &watched{frozen: true}
	if got := g.intervalLocked(); got != 100*time.Millisecond {
		t.Errorf("a job frozen: interval %v, want 100ms", got)
	}
	delete(g.jobs, 1)
	g.mu.Unlock()
}
