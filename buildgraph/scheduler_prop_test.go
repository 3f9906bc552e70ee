package buildgraph

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Property tests: random DAGs, random limits, random failures and random
// completion orders. Whatever happens, the scheduler must never exceed a
// limit, must start a task only after all its dependencies succeeded, must
// never start a dependent of a failure (or anything after a failure without
// keep-going), must not wedge, and must give every task exactly one outcome
// consistent with what happened.

var propPools = map[string]int{"p1": 1, "p2": 2}

type propCase struct {
	g    *Graph
	lim  Limits
	hist *History
	fail map[*Task]bool // tasks that fail when run
}

func randomCase(r *rand.Rand) propCase {
	n := r.IntN(40)
	tasks := make([]*Task, n)
	density := r.Float64() * 0.3
	for i := range tasks {
		t := &Task{ID: "t" + strconv.Itoa(i), Shell: "run " + strconv.Itoa(i)}
		for j := range i {
			if r.Float64() < density {
				t.Deps = append(t.Deps, tasks[j].ID)
			}
		}
		t.CPUs = r.IntN(4)
		if r.IntN(2) == 0 {
			t.MemMB = r.IntN(500)
		}
		switch r.IntN(5) {
		case 0:
			t.Pool = "p1"
		case 1:
			t.Pool = "p2"
		}
		tasks[i] = t
	}
	// Graph order unrelated to dependency order.
	r.Shuffle(n, func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
	c := propCase{g: &Graph{Tasks: tasks, Pools: propPools}, fail: map[*Task]bool{}}
	if r.IntN(4) != 0 {
		c.lim.Slots = 3 + r.IntN(6) // ≥ the widest task (3)
	}
	if r.IntN(2) == 0 {
		c.lim.MemMB = 500 + r.IntN(1000) // ≥ the fattest task
	}
	c.lim.KeepGoing = r.IntN(2) == 0
	failRate := []float64{0, 0.05, 0.3}[r.IntN(3)]
	if r.IntN(2) == 0 {
		c.hist = NewHistory()
	}
	for _, t := range tasks {
		if r.Float64() < failRate {
			c.fail[t] = true
		}
		if c.hist != nil && r.IntN(2) == 0 {
			c.hist.Record(t, time.Duration(r.IntN(5000))*time.Millisecond)
		}
	}
	return c
}

// usage tracks what the test believes is running.
type usage struct {
	lim            Limits
	pools          map[string]int
	slots, mem     int
	pool           map[string]int
	running        map[*Task]bool
	ran            map[*Task]Outcome // what the test reported
	stoppedByError bool              // a failure was reported without KeepGoing
	canceled       bool
	// concurrent: a worker's record of a failure precedes its report to the
	// scheduler, so stops are checked by the workers themselves.
	concurrent bool
}

func newUsage(c propCase) *usage {
	return &usage{lim: c.lim, pools: c.g.Pools, pool: map[string]int{}, running: map[*Task]bool{}, ran: map[*Task]Outcome{}}
}

// start checks and records a task handed out by the scheduler.
func (u *usage) start(t *Task) error {
	if !u.concurrent && (u.stoppedByError || u.canceled) {
		return fmt.Errorf("task %s handed out after the schedule stopped", t.ID)
	}
	if u.running[t] || u.ran[t] != Unfinished {
		return fmt.Errorf("task %s handed out twice", t.ID)
	}
	u.slots += t.Slots()
	u.mem += t.MemMB
	if t.Pool != "" {
		u.pool[t.Pool]++
	}
	u.running[t] = true
	switch {
	case u.lim.Slots > 0 && u.slots > u.lim.Slots:
		return fmt.Errorf("slots %d > limit %d after starting %s", u.slots, u.lim.Slots, t.ID)
	case u.lim.MemMB > 0 && u.mem > u.lim.MemMB:
		return fmt.Errorf("memory %d > limit %d after starting %s", u.mem, u.lim.MemMB, t.ID)
	case t.Pool != "" && u.pool[t.Pool] > u.pools[t.Pool]:
		return fmt.Errorf("pool %s at %d > limit %d after starting %s", t.Pool, u.pool[t.Pool], u.pools[t.Pool], t.ID)
	}
	return nil
}

// finish records the end of a task, before it is reported.
func (u *usage) finish(t *Task, o Outcome) {
	u.slots -= t.Slots()
	u.mem -= t.MemMB
	if t.Pool != "" {
		u.pool[t.Pool]--
	}
	delete(u.running, t)
	u.ran[t] = o
	if o == Failed && !u.lim.KeepGoing {
		u.stoppedByError = true
	}
	if o == Canceled {
		u.canceled = true
	}
}

// checkDeps verifies that every dependency of t has succeeded.
func checkDeps(g *Graph, byID map[string]*Task, ran map[*Task]Outcome, t *Task) error {
	for _, d := range t.Deps {
		if ran[byID[d]] != Succeeded {
			return fmt.Errorf("task %s started while its dependency %s is %v", t.ID, d, ran[byID[d]])
		}
	}
	return nil
}

// checkFinal verifies the outcomes of a finished schedule.
func checkFinal(s *Scheduler, c propCase, ran map[*Task]Outcome, canceled bool) error {
	if !s.Finished() {
		return fmt.Errorf("not finished: %+v", s.Progress())
	}
	byID := map[string]*Task{}
	for _, t := range c.g.Tasks {
		byID[t.ID] = t
	}
	res := map[*Task]Result{}
	anyFailed := false
	for _, r := range s.Results() {
		res[r.Task] = r
		anyFailed = anyFailed || r.Outcome == Failed
	}
	if len(res) != len(c.g.Tasks) {
		return fmt.Errorf("%d results for %d tasks", len(res), len(c.g.Tasks))
	}
	var counts [NumOutcomes]int
	for _, t := range c.g.Tasks {
		r := res[t]
		counts[r.Outcome]++
		if want, ok := ran[t]; ok && r.Outcome != want {
			return fmt.Errorf("task %s: outcome %v, but it was reported %v", t.ID, r.Outcome, want)
		}
		if _, ok := ran[t]; ok {
			continue
		}
		// Never ran: Skipped exactly when a dependency failed or was skipped.
		depFailed := false
		for _, d := range t.Deps {
			o := res[byID[d]].Outcome
			depFailed = depFailed || o == Failed || o == Skipped
		}
		switch r.Outcome {
		case Skipped:
			if !depFailed || r.Cause == nil || res[r.Cause].Outcome != Failed {
				return fmt.Errorf("task %s skipped without a failed dependency (cause %v)", t.ID, r.Cause)
			}
		case NotRun:
			if depFailed || canceled || c.lim.KeepGoing || !anyFailed {
				return fmt.Errorf("task %s not run (dep failed %v, canceled %v, keep-going %v, any failure %v)",
					t.ID, depFailed, canceled, c.lim.KeepGoing, anyFailed)
			}
		case Canceled:
			if depFailed || !canceled {
				return fmt.Errorf("task %s canceled (dep failed %v, canceled %v)", t.ID, depFailed, canceled)
			}
		default:
			return fmt.Errorf("task %s never ran but is %v", t.ID, r.Outcome)
		}
	}
	if p := s.Progress(); p.Done != counts || p.Finished() != len(c.g.Tasks) || p.Running+p.Ready+p.Waiting != 0 ||
		p.SlotsUsed != 0 || p.MemUsedMB != 0 || p.WorkLeft != 0 || p.PathLeft != 0 {
		return fmt.Errorf("final progress %+v, counted %v", p, counts)
	}
	return nil
}

func TestSchedulerPropertiesSerial(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 3000 {
		c := randomCase(r)
		if err := runSerialCase(r, c); err != nil {
			t.Fatalf("case %d (%d tasks, %+v): %v\n%s", iter, len(c.g.Tasks), c.lim, err, dumpGraph(c.g))
		}
	}
}

// runSerialCase drives a schedule from one goroutine, interleaving starts
// and completions at random, with an occasional Cancel.
func runSerialCase(r *rand.Rand, c propCase) error {
	s, err := NewScheduler(c.g, c.lim, c.hist)
	if err != nil {
		return err
	}
	byID := map[string]*Task{}
	for _, t := range c.g.Tasks {
		byID[t.ID] = t
	}
	u := newUsage(c)
	var running []*Task
	cancelAt := -1
	if r.IntN(10) == 0 {
		cancelAt = r.IntN(len(c.g.Tasks) + 1)
	}
	for step := 0; ; step++ {
		if step == cancelAt {
			// Cancel after the end (a failure finished the schedule) is a
			// no-op and changes no outcome.
			u.canceled = u.canceled || !s.Finished()
			s.Cancel()
		}
		if len(running) == 0 || r.IntN(2) == 0 {
			if t, ok := s.Next(); ok {
				if err := u.start(t); err != nil {
					return err
				}
				if err := checkDeps(c.g, byID, u.ran, t); err != nil {
					return err
				}
				running = append(running, t)
				continue
			}
			if len(running) == 0 {
				break // nothing runs and nothing starts: must be finished
			}
		}
		k := r.IntN(len(running))
		t := running[k]
		running = append(running[:k], running[k+1:]...)
		o := Succeeded
		switch {
		case c.fail[t]:
			o = Failed
		case u.canceled && r.IntN(2) == 0:
			o = Canceled // killed by the cancellation
		}
		u.finish(t, o)
		s.Complete(t, o)
	}
	return checkFinal(s, c, u.ran, u.canceled)
}

func TestSchedulerPropertiesConcurrent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	iters := 300
	if testing.Short() {
		iters = 50
	}
	for iter := range iters {
		c := randomCase(r)
		workers := 1 + r.IntN(6)
		if err := runConcurrentCase(c, workers, r.Uint64()); err != nil {
			t.Fatalf("case %d (%d tasks, %d workers, %+v): %v\n%s", iter, len(c.g.Tasks), workers, c.lim, err, dumpGraph(c.g))
		}
	}
}

// runConcurrentCase runs a schedule with workers goroutines taking tasks
// with Acquire and completing them after a random pause, while another
// goroutine polls Progress.
func runConcurrentCase(c propCase, workers int, seed uint64) error {
	s, err := NewScheduler(c.g, c.lim, c.hist)
	if err != nil {
		return err
	}
	byID := map[string]*Task{}
	for _, t := range c.g.Tasks {
		byID[t.ID] = t
	}
	var (
		mu sync.Mutex
		u  = newUsage(c)
		// stopped is set once a failure's Complete has returned (without
		// keep-going): an Acquire that begins after that must not return a
		// task.
		stopped atomic.Bool
		errs    []error
		wg      sync.WaitGroup
		ctx     = context.Background()
		fails   = func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
	)
	u.concurrent = true
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for {
				wasStopped := stopped.Load()
				t, err := s.Acquire(ctx)
				if errors.Is(err, ErrNoMoreTasks) {
					return
				}
				if err != nil {
					fails(err)
					return
				}
				if wasStopped {
					fails(fmt.Errorf("task %s handed out after the schedule stopped", t.ID))
				}
				mu.Lock()
				if err := u.start(t); err != nil {
					errs = append(errs, err)
				}
				if err := checkDeps(c.g, byID, u.ran, t); err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
				if r.IntN(4) == 0 {
					time.Sleep(time.Duration(r.IntN(50)) * time.Microsecond)
				} else {
					runtime.Gosched()
				}
				o := Succeeded
				if c.fail[t] {
					o = Failed
				}
				mu.Lock()
				u.finish(t, o)
				mu.Unlock()
				s.Complete(t, o)
				if o == Failed && !c.lim.KeepGoing {
					stopped.Store(true)
				}
			}
		}()
	}
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			default:
			}
			p := s.Progress()
			if p.Waiting+p.Ready+p.Running+p.Finished() != p.Total {
				fails(fmt.Errorf("progress does not add up: %+v", p))
			}
			runtime.Gosched()
		}
	}()
	wg.Wait()
	close(stop)
	<-polled
	if err := s.Wait(ctx); err != nil {
		return err
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return checkFinal(s, c, u.ran, false)
}
