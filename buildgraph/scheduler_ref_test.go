package buildgraph

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// refSched is a slow, obviously correct model of the Scheduler's order and
// bookkeeping: every Next scans all tasks for the ready one of highest
// priority (then earliest in the graph) that fits, and Progress walks all
// tasks. It shares only the priorities with the Scheduler under test.
type refSched struct {
	g          *Graph
	lim        Limits
	prio, w    []int64
	byID       map[string]int
	state      []nodeState
	outcome    []Outcome
	deps       [][]int
	slots, mem int
	pool       map[string]int
	stopped    bool
	canceled   bool
}

func newRefSched(s *Scheduler, g *Graph) *refSched {
	r := &refSched{g: g, lim: s.lim, byID: map[string]int{}, pool: map[string]int{}}
	r.prio, r.w = make([]int64, len(s.nodes)), make([]int64, len(s.nodes))
	for _, n := range s.nodes {
		r.prio[n.index], r.w[n.index] = n.prio, n.weight
	}
	for i, t := range g.Tasks {
		r.byID[t.ID] = i
	}
	r.state = make([]nodeState, len(g.Tasks))
	r.outcome = make([]Outcome, len(g.Tasks))
	r.deps = make([][]int, len(g.Tasks))
	for i, t := range g.Tasks {
		for _, d := range t.Deps {
			r.deps[i] = append(r.deps[i], r.byID[d])
		}
	}
	return r
}

// readyNow reports whether task i is ready: waiting on nothing, not yet
// started, and every dependency succeeded.
func (r *refSched) readyNow(i int) bool {
	if r.state[i] != stateWaiting {
		return false
	}
	for _, d := range r.deps[i] {
		if r.outcome[d] != Succeeded {
			return false
		}
	}
	return true
}

func (r *refSched) next() int {
	if r.stopped {
		return -1
	}
	best := -1
	for i, t := range r.g.Tasks {
		if !r.readyNow(i) {
			continue
		}
		if r.lim.Slots > 0 && r.slots+t.Slots() > r.lim.Slots ||
			r.lim.MemMB > 0 && r.mem+t.MemMB > r.lim.MemMB ||
			t.Pool != "" && r.pool[t.Pool] >= r.g.Pools[t.Pool] {
			continue
		}
		if best < 0 || r.prio[i] > r.prio[best] {
			best = i
		}
	}
	if best >= 0 {
		t := r.g.Tasks[best]
		r.state[best] = stateRunning
		r.slots += t.Slots()
		r.mem += t.MemMB
		r.pool[t.Pool]++
	}
	return best
}

func (r *refSched) complete(i int, o Outcome) {
	t := r.g.Tasks[i]
	r.state[i], r.outcome[i] = stateDone, o
	r.slots -= t.Slots()
	r.mem -= t.MemMB
	r.pool[t.Pool]--
	switch {
	case o == Failed && !r.lim.KeepGoing:
		r.stopped = true
	case o == Canceled:
		r.stopped, r.canceled = true, true
	}
}

// progressWalk computes s's Progress by walking every task, as the
// Scheduler did before it kept counters.
func progressWalk(s *Scheduler) Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := Progress{Total: len(s.nodes), Timed: s.timed}
	for x, n := range s.nodes {
		t := s.tasks[x]
		ready := n.state == stateWaiting && s.ready.has(int32(x))
		switch {
		case ready:
			p.Ready++
		case n.state == stateWaiting:
			p.Waiting++
		case n.state == stateRunning:
			p.Running++
			p.SlotsUsed += t.Slots()
			p.MemUsedMB += t.MemMB
		case n.state == stateDone:
			p.Done[n.outcome]++
		}
		if ready || n.state == stateRunning {
			p.PathLeft = max(p.PathLeft, n.prio)
		}
		if n.state != stateDone {
			p.WorkLeft += n.weight
		}
	}
	return p
}

// TestSchedulerMatchesReference drives random cases through the Scheduler
// and the reference model side by side, in the same random interleaving of
// starts, completions (some failing) and cancellations: every Next must
// hand out the task the model picks, and Progress must equal a walk of all
// tasks at every step.
func TestSchedulerMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	iters := 3000
	if testing.Short() {
		iters = 500
	}
	for iter := range iters {
		c := randomCase(r)
		if r.IntN(3) == 0 {
			c = tiedCase(r)
		}
		if err := runRefCase(r, c); err != nil {
			t.Fatalf("case %d (%d tasks, %+v): %v\n%s", iter, len(c.g.Tasks), c.lim, err, dumpGraph(c.g))
		}
	}
}

// tiedCase is a graph in which most priorities tie (few, shallow
// dependencies and equal weights), so that graph order decides most picks.
func tiedCase(r *rand.Rand) propCase {
	c := randomCase(r)
	for _, t := range c.g.Tasks {
		if len(t.Deps) > 1 {
			t.Deps = t.Deps[:1]
		}
	}
	c.hist = nil
	return c
}

func runRefCase(r *rand.Rand, c propCase) error {
	s, err := NewScheduler(c.g, c.lim, c.hist)
	if err != nil {
		return err
	}
	ref := newRefSched(s, c.g)
	check := func(step int) error {
		got, want := s.Progress(), progressWalk(s)
		if got != want {
			return fmt.Errorf("step %d: Progress %+v, a walk of all tasks gives %+v", step, got, want)
		}
		return nil
	}
	if err := check(0); err != nil {
		return err
	}
	var running []int
	for step := 1; ; step++ {
		if r.IntN(20) == 0 && !s.Finished() {
			s.Cancel()
			ref.stopped, ref.canceled = true, true
		}
		if len(running) == 0 || r.IntN(2) == 0 {
			want := ref.next()
			tk, ok := s.Next()
			got := -1
			if ok {
				got = int(s.nodes[s.mustPosition(tk, "test")].index)
			}
			if got != want {
				return fmt.Errorf("step %d: Next gave %s, the reference %s", step, idOf(c.g, got), idOf(c.g, want))
			}
			if ok {
				running = append(running, got)
				if err := check(step); err != nil {
					return err
				}
				continue
			}
			if len(running) == 0 {
				break
			}
		}
		k := r.IntN(len(running))
		i := running[k]
		running = append(running[:k], running[k+1:]...)
		o := Succeeded
		switch {
		case c.fail[c.g.Tasks[i]]:
			o = Failed
		case ref.canceled && r.IntN(2) == 0:
			o = Canceled
		}
		ref.complete(i, o)
		s.Complete(c.g.Tasks[i], o)
		if err := check(step); err != nil {
			return err
		}
	}
	if !s.Finished() {
		return fmt.Errorf("not finished: %+v", s.Progress())
	}
	return check(-1)
}

func idOf(g *Graph, i int) string {
	if i < 0 {
		return "nothing"
	}
	return g.Tasks[i].ID
}
