package runtime

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/numasteal/numasteal/balance"
)

// Random programs that mix every way to submit and to wait — Join, Go and
// Wait on the task's own group, GoNext, injection into an outside group
// waited on with Ctx.Wait, an outside group shared by waiters on several
// workers, and tasks that block their worker (not helping) until a child
// they queued has run — on 16 virtual workers under each policy: every
// task runs exactly once and every wait returns. On each node all workers
// but one at most block at a time, so a blocked task's child always has a
// free worker to run it, even under Local, which never leaves the node: a
// hang is the runtime leaving queued work behind while workers sleep.
func TestRandomProgramsRunEveryTaskOnce(t *testing.T) {
	for _, policy := range balance.Names() {
		t.Run(policy, func(t *testing.T) {
			rt := virtualRuntimeWith(t, "16amd64-8n2c", policy, Config{})
			p := &chaosProgram{rt: rt, runs: make([]atomic.Int32, 1<<16), blockers: map[int]chan struct{}{}}
			for _, w := range rt.workers {
				if p.blockers[w.node] == nil {
					p.blockers[w.node] = make(chan struct{}, len(rt.byNode[w.node])-1)
				}
			}
			for round := range 200 {
				p.seed = uint64(round)
				g := rt.Group(context.Background())
				for range 4 {
					g.Go(func(c *Ctx) error { return p.node(c, 0) })
				}
				watch := time.AfterFunc(10*time.Second, func() {
					fmt.Printf("HANG round %d: %s\n", round, idleState(rt))
					for _, w := range rt.workers {
						fmt.Printf("w%d inbox=%d deque=%d lifo=%v\n", w.id, w.inbox.size.Load(), w.stealQ.Len(), w.lifo.Load() != nil)
					}
				})
				err := g.Wait()
				watch.Stop()
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if p.ids.Load() > int32(len(p.runs)) {
					t.Fatalf("round %d: %d tasks, more than the test counts", round, p.ids.Load())
				}
			}
			t.Logf("%d tasks in 200 programs", p.ids.Load())
			requireRanOnce(t, p.runs[:p.ids.Load()])
			if n := p.spinning.Load(); n > 0 {
				t.Errorf("%d tasks started on a worker still counted as spinning", n)
			}
		})
	}
}

type chaosProgram struct {
	rt       *Runtime
	seed     uint64
	ids      atomic.Int32
	runs     []atomic.Int32
	blockers map[int]chan struct{} // by node: a token per task blocking its worker
	spinning atomic.Int32          // tasks that started on a worker counted as spinning
}

const chaosDepth = 5

// node is one task of a random program: it counts its run, then does
// what its own random draw says with children one level deeper.
func (p *chaosProgram) node(c *Ctx, depth int) error {
	id := p.ids.Add(1) - 1
	if int(id) < len(p.runs) {
		p.runs[id].Add(1)
	}
	if c.w.spinning {
		p.spinning.Add(1) // a task runs on a worker counted as searching
	}
	r := rand.New(rand.NewPCG(p.seed, uint64(id)))
	if depth >= chaosDepth {
		burn(100 + r.IntN(2000))
		return nil
	}
	child := func(c *Ctx) error { return p.node(c, depth+1) }
	switch r.IntN(7) {
	case 0: // a leaf
		burn(100 + r.IntN(2000))
		return nil
	case 1:
		return c.Join(child, child)
	case 2: // children on the task's own group, waited on helping
		g := c.Group()
		for range 1 + r.IntN(3) {
			if r.IntN(2) == 0 {
				c.GoNext(g, child)
			} else {
				c.Go(g, child)
			}
		}
		return c.Wait(g)
	case 3: // injected children, waited on helping
		g := p.rt.Group(c.Context())
		for range 1 + r.IntN(3) {
			g.Go(child)
		}
		return c.Wait(g)
	case 4: // one outside group, waited on by several tasks
		// Its task is a leaf: a helping Wait on a group that is not the
		// waiter's own subtree may run, nested on its stack, a task that
		// waits for the waiter (Ctx.Wait's doc), so a shared task that
		// waited itself could deadlock the program, not the runtime.
		shared := p.rt.Group(c.Context())
		shared.Go(func(c *Ctx) error { return p.node(c, chaosDepth) })
		g := c.Group()
		for range 2 {
			c.Go(g, func(c *Ctx) error {
				if err := p.node(c, depth+1); err != nil {
					return err
				}
				return c.Wait(shared)
			})
		}
		return c.Wait(g)
	default: // block the worker until a queued child has run
		tokens := p.blockers[c.Node()]
		select {
		case tokens <- struct{}{}:
		default:
			return c.Join(child, child) // enough tasks block on this node already
		}
		defer func() { <-tokens }()
		ran := make(chan error, 1)
		g := c.Group()
		fn := func(c *Ctx) error { ran <- p.node(c, depth+1); return nil }
		if r.IntN(2) == 0 {
			c.GoNext(g, fn)
		} else {
			c.Go(g, fn)
		}
		select {
		case err := <-ran:
			if err != nil {
				return err
			}
		case <-time.After(lostWakeupBound):
			return fmt.Errorf("task %d: the child it queued before blocking did not run in %v; %s", id, lostWakeupBound, idleState(p.rt))
		}
		return c.Wait(g)
	}
}
