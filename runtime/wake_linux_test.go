package runtime

import (
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/internal/procstat"
	"github.com/numasteal/numasteal/topology/cpuset"
	"golang.org/x/sys/unix"
)

// BenchmarkWakeLatency times how long a parked worker takes to start a
// task that a busy worker spawned: the wait of a fork-join's first
// promotion after the runtime was idle. Each op takes one sample of each
// contender, alternating, on a runtime of two workers:
//
//	worker  a task on worker A waits until B is parked, spawns a task and
//	        spins until that task starts on B (A is busy: only B can run
//	        it); the latency is from the spawn to the task's first line
//	futex   the floor: a goroutine locked to a thread pinned to B's CPU
//	        sleeps in futex(2); a task on A sees its thread asleep
//	        (/proc), stores to the word, wakes it and spins until it runs
//
// It reports each contender's median, 90th and 99th percentile (name-p50-ns
// and so on). B's park token travels through a Go channel (park.go): the
// woken goroutine is locked to B's thread, so Go's scheduler readies it on
// A's P, another thread (an M with an idle P) steals it from there and
// hands the P to B's thread; futex wakes B's thread directly.
//
//	go test -run '^$' -bench WakeLatency -benchtime 400x ./runtime
func BenchmarkWakeLatency(b *testing.B) {
	rt := benchRuntime(b, 2)
	if rt.Workers() < 2 {
		b.Skipf("%d usable CPU: a wake-up needs two workers", rt.Workers())
	}
	fl := startFutexFloor(b, rt.workers[0].cpu)
	defer fl.stop()

	var worker, futex []float64
	for b.Loop() {
		waitAllParked(b, rt)
		var d time.Duration
		err := onWorker(rt, func(c *Ctx) error {
			var err error
			d, err = wakeSample(c)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		worker = append(worker, float64(d))

		err = onWorker(rt, func(c *Ctx) error {
			other := rt.workers[1-c.Worker()].cpu
			var err error
			d, err = fl.sample(other)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		futex = append(futex, float64(d))
	}
	for _, c := range []struct {
		name string
		v    []float64
	}{{"worker", worker}, {"futex", futex}} {
		slices.Sort(c.v)
		for _, q := range []int{50, 90, 99} {
			b.ReportMetric(c.v[(len(c.v)-1)*q/100], fmt.Sprintf("%s-p%d-ns", c.name, q))
		}
	}
}

// wakeSample is one worker sample of BenchmarkWakeLatency, run as a task
// on worker A of a two-worker runtime.
func wakeSample(c *Ctx) (time.Duration, error) {
	rt := c.w.rt
	// A's task start woke B as a spinner (step 2 of park.go); wait until
	// it parked again, so that the spawn below must wake it.
	if err := spinUntil("the other worker to park", func() bool {
		return rt.sched.idle() == 1 && rt.sched.spinning() == 0
	}); err != nil {
		return 0, err
	}
	var started atomic.Int64
	t0 := time.Now()
	c.Go(c.Group(), func(*Ctx) error {
		started.Store(int64(time.Since(t0)) + 1)
		return nil
	})
	if err := spinUntil("the spawned task to start", func() bool { return started.Load() != 0 }); err != nil {
		return 0, err
	}
	return time.Duration(started.Load() - 1), nil
}

// spinUntil spins, without sleeping or yielding, until cond holds, or
// fails after lostWakeupBound naming what it waited for.
func spinUntil(what string, cond func() bool) error {
	deadline := time.Now().Add(lostWakeupBound)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %v for %s", lostWakeupBound, what)
		}
	}
	return nil
}

// futexFloor is BenchmarkWakeLatency's futex contender: a goroutine locked
// to a thread that sleeps in futex(2) on word until woken.
type futexFloor struct {
	word  atomic.Uint32 // 1: wake up; 2: exit
	woke  atomic.Int64  // when it ran after the wake-up (ns since t0), +1; 0 until then
	t0    time.Time
	cpu   atomic.Int32 // the CPU to move to before the next sleep, -1 for none
	on    int          // the CPU the thread is pinned to; sample's caller only
	tid   atomic.Int32
	ready chan error // the thread's start, then each sleep's end
}

// Operations of futex(2), from linux/futex.h.
const (
	futexWaitPrivate = 0 | 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	futexWakePrivate = 1 | 128 // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
)

// startFutexFloor starts the floor's thread, pinned to cpu and asleep.
func startFutexFloor(b *testing.B, cpu int) *futexFloor {
	f := &futexFloor{ready: make(chan error, 1), t0: time.Now(), on: cpu}
	f.cpu.Store(-1)
	go f.loop(cpu)
	if err := <-f.ready; err != nil {
		b.Fatal(err)
	}
	return f
}

func (f *futexFloor) loop(cpu int) {
	unlock, err := affinity.LockAndPin(cpuset.Of(cpu))
	if err != nil {
		f.ready <- err
		return
	}
	defer unlock()
	f.tid.Store(int32(unix.Gettid()))
	f.ready <- nil
	for {
		if cpu := f.cpu.Swap(-1); cpu >= 0 {
			if err := affinity.PinThread(cpuset.Of(int(cpu))); err != nil {
				f.ready <- err
				return
			}
		}
		for f.word.Load() == 0 {
			unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&f.word)),
				futexWaitPrivate, 0, 0, 0, 0)
		}
		f.woke.Store(int64(time.Since(f.t0)) + 1)
		if f.word.Swap(0) == 2 {
			return
		}
		f.ready <- nil
	}
}

// sample moves the floor's thread to cpu if it is elsewhere (a wake-up
// that takes it through the pin and back to sleep), waits until the thread
// sleeps, then wakes it and spins until it runs. One caller at a time.
func (f *futexFloor) sample(cpu int) (time.Duration, error) {
	if cpu != f.on {
		f.cpu.Store(int32(cpu))
		f.wake(1)
		if err := <-f.ready; err != nil {
			return 0, err
		}
		f.on = cpu
	}
	if err := spinUntil("the futex thread to sleep", func() bool {
		return f.cpu.Load() < 0 && threadSleeps(int(f.tid.Load()))
	}); err != nil {
		return 0, err
	}
	f.woke.Store(0)
	t := time.Since(f.t0)
	f.wake(1)
	if err := spinUntil("the futex thread to wake", func() bool { return f.woke.Load() != 0 }); err != nil {
		return 0, err
	}
	d := time.Duration(f.woke.Load()-1) - t
	if err := <-f.ready; err != nil {
		return 0, err
	}
	return d, nil
}

func (f *futexFloor) wake(v uint32) {
	f.word.Store(v)
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(&f.word)),
		futexWakePrivate, 1, 0, 0, 0)
}

func (f *futexFloor) stop() { f.wake(2) }

// threadSleeps reports whether thread tid of this process is in an
// interruptible sleep (state S in /proc).
func threadSleeps(tid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/stat", tid))
	if err != nil {
		return false
	}
	st, err := procstat.Parse(b)
	return err == nil && st.State() == 'S'
}
