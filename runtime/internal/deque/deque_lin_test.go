package deque

// Linearizability of the Chase–Lev deque, checked with porcupine.
//
// Many small random concurrent histories (one owner pushing and popping,
// thieves stealing) are recorded with monotonic call/return timestamps and
// each is checked against a sequential deque model. Small histories on
// 1- to 4-slot rings keep each check to microseconds while still growing the ring,
// wrapping around it and racing for the last element. Sanity tests show the
// check is not vacuous: fabricated bad histories and deliberately broken
// deques run through the same harness are rejected.

import (
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"go.uber.org/goleak"
)

// linOp is a deque operation in a history.
type linOp uint8

const (
	linPush linOp = iota
	linPop
	linSteal
)

// linRes is how a taking operation ended.
type linRes uint8

const (
	linOK    linRes = iota // took V (or, for a push, done)
	linEmpty               // found the deque empty
	linAbort               // Steal lost a race: (nil, true)
)

// linIn is an operation's input; V is the value pushed.
type linIn struct {
	Op linOp
	V  int
}

// linOut is an operation's output; V is the value taken.
type linOut struct {
	Res linRes
	V   int
}

// dequeModel is the sequential specification: the state is the deque's
// contents, oldest first, as an immutable []int. Push appends at the
// bottom; Pop takes the newest or reports empty; Steal takes the oldest or
// reports empty, or aborts without effect (always allowed, as in Lê et al.).
var dequeModel = porcupine.Model{
	Init: func() any { return []int(nil) },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.([]int), input.(linIn), output.(linOut)
		switch in.Op {
		case linPush:
			return true, append(slices.Clip(s), in.V)
		case linPop:
			if len(s) == 0 {
				return out.Res == linEmpty, s
			}
			return out.Res == linOK && out.V == s[len(s)-1], s[:len(s)-1]
		default: // linSteal
			switch {
			case out.Res == linAbort:
				return true, s
			case len(s) == 0:
				return out.Res == linEmpty, s
			default:
				return out.Res == linOK && out.V == s[0], s[1:]
			}
		}
	},
	Equal: func(a, b any) bool { return slices.Equal(a.([]int), b.([]int)) },
	Hash: func(state any) uint64 {
		h := uint64(14695981039346656037)
		for _, v := range state.([]int) {
			h = (h ^ uint64(v)) * 1099511628211
		}
		return h
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linIn), output.(linOut)
		name := [...]string{"push", "pop", "steal"}[in.Op]
		if in.Op == linPush {
			return fmt.Sprintf("push(%d)", in.V)
		}
		return name + "() → " + [...]string{fmt.Sprint(out.V), "empty", "abort"}[out.Res]
	},
	DescribeState: func(state any) string { return fmt.Sprint(state) },
}

// linDeque is the harness's view of a deque, so broken variants can run
// through the same code as the real one.
type linDeque interface {
	push(*int)
	pop() *int
	steal() (x *int, retry bool)
}

// linReal adapts Deque.
type linReal struct{ d *Deque[int] }

func (r linReal) push(x *int)         { r.d.Push(x) }
func (r linReal) pop() *int           { return r.d.Pop() }
func (r linReal) steal() (*int, bool) { return r.d.Stealer().Steal() }
func linResult(x *int, retry bool) linOut {
	switch {
	case x != nil:
		return linOut{Res: linOK, V: *x}
	case retry:
		return linOut{Res: linAbort}
	default:
		return linOut{Res: linEmpty}
	}
}

// linShape bounds a random history.
type linShape struct {
	prefill      int // owner pushes, before the others start: 0..prefill
	ownerOps     [2]int
	thieves      [2]int
	thiefOps     [2]int
	pushPercent  int // of owner ops
	yieldPercent int // chance of a Gosched between ops
	spin         int // every client idles 0..spin loop turns before each op
}

// linBetween returns a random int in [r[0], r[1]].
func linBetween(rng *rand.Rand, r [2]int) int { return r[0] + rng.IntN(r[1]-r[0]+1) }

// linHistory runs one random history on d and returns it. All goroutines
// wait at a barrier, then run their operations, stamping each call and
// return with a monotonic clock (time.Since of a base time).
func linHistory(rng *rand.Rand, d linDeque, sh linShape) []porcupine.Operation {
	base := time.Now()
	now := func() int64 { return int64(time.Since(base)) }
	nThieves := linBetween(rng, sh.thieves)
	ownerOps := linBetween(rng, sh.ownerOps)
	vals := dequeInts(sh.prefill + ownerOps + 1)
	next := 1 // value 0 is unused so a zero linOut never passes as a take

	// Pre-compute each client's script so the goroutines draw no shared
	// randomness.
	type step struct {
		op   linOp
		spin int
		gos  bool
	}
	scripts := make([][]step, 1+nThieves)
	for range ownerOps {
		op := linPop
		if rng.IntN(100) < sh.pushPercent {
			op = linPush
		}
		scripts[0] = append(scripts[0], step{op: op, spin: rng.IntN(sh.spin + 1),
			gos: rng.IntN(100) < sh.yieldPercent})
	}
	for c := 1; c <= nThieves; c++ {
		for range linBetween(rng, sh.thiefOps) {
			scripts[c] = append(scripts[c], step{op: linSteal, spin: rng.IntN(sh.spin + 1),
				gos: rng.IntN(100) < sh.yieldPercent})
		}
	}

	hist := make([][]porcupine.Operation, 1+nThieves)
	for range rng.IntN(sh.prefill + 1) {
		call := now()
		d.push(vals[next])
		hist[0] = append(hist[0], porcupine.Operation{ClientId: 0, Input: linIn{Op: linPush, V: next}, Call: call, Output: linOut{}, Return: now()})
		next++
	}

	// Two-stage start. Clients yield until start (a busy wait would hold a
	// CPU that the starter needs: there are more clients than CPUs), then
	// the first ones to run wait briefly, busily, for each other, so that
	// as many clients as there are CPUs begin within a few hundred
	// nanoseconds and their operations overlap.
	var start atomic.Bool
	var running atomic.Int32
	together := int32(min(len(scripts), goruntime.GOMAXPROCS(0)))
	var ready, wg sync.WaitGroup
	ready.Add(len(scripts))
	for c := range scripts {
		wg.Go(func() {
			ready.Done()
			for !start.Load() {
				goruntime.Gosched()
			}
			running.Add(1)
			for i := 0; i < linGateSpins && running.Load() < together; i++ {
			}
			for _, s := range scripts[c] {
				for range s.spin {
				}
				var in linIn
				var out linOut
				call := now()
				switch s.op {
				case linPush:
					in = linIn{Op: linPush, V: next}
					d.push(vals[next])
					next++ // only client 0 pushes
				case linPop:
					in = linIn{Op: linPop}
					out = linResult(d.pop(), false)
				case linSteal:
					in = linIn{Op: linSteal}
					out = linResult(d.steal())
				}
				hist[c] = append(hist[c], porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: now()})
				if s.gos {
					goruntime.Gosched()
				}
			}
		})
	}
	ready.Wait()
	start.Store(true)
	wg.Wait()
	return slices.Concat(hist...)
}

// linGateSpins bounds the busy wait at a history's start (tens of
// microseconds), after which a client starts alone.
const linGateSpins = 2000

// linStats sums what the histories exercised, to show the run was not
// vacuous.
type linStats struct {
	histories, ops, overlapping, popTook, popEmpty, stealTook, stealEmpty, aborts int
}

func (st *linStats) add(h []porcupine.Operation) {
	st.histories++
	st.ops += len(h)
	for i, a := range h {
		out := a.Output.(linOut)
		switch a.Input.(linIn).Op {
		case linPop:
			if out.Res == linOK {
				st.popTook++
			} else {
				st.popEmpty++
			}
		case linSteal:
			switch out.Res {
			case linOK:
				st.stealTook++
			case linEmpty:
				st.stealEmpty++
			default:
				st.aborts++
			}
		}
		for _, b := range h[i+1:] {
			if a.ClientId != b.ClientId && a.Call <= b.Return && b.Call <= a.Return {
				st.overlapping++
			}
		}
	}
}

// linDescribe renders a history for a failure message.
func linDescribe(h []porcupine.Operation) string {
	h = slices.Clone(h)
	slices.SortFunc(h, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
	var sb strings.Builder
	for _, o := range h {
		fmt.Fprintf(&sb, "\n  client %d [%6d, %6d] %s", o.ClientId, o.Call, o.Return,
			dequeModel.DescribeOperation(o.Input, o.Output))
	}
	return sb.String()
}

// linDefaultShape: histories of 4–8 owner ops against 2–3 thieves of 2–4
// steals; run on 1- to 4-slot rings, so growth and wraparound happen.
var linDefaultShape = linShape{
	prefill:      4,
	ownerOps:     [2]int{4, 8},
	thieves:      [2]int{2, 3},
	thiefOps:     [2]int{2, 4},
	pushPercent:  60,
	yieldPercent: 10,
	spin:         1000,
}

// TestDequeLinearizable checks 30,000 random concurrent histories of the
// real deque; with -short, 10,000.
func TestDequeLinearizable(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	histories := 30000
	if testing.Short() {
		histories = 10000
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	var st linStats
	grew := 0
	for i := range histories {
		logCap := rng.IntN(3) // 1, 2 or 4 slots
		d := newDeque[int](logCap)
		h := linHistory(rng, linReal{d}, linDefaultShape)
		st.add(h)
		if d.capacity() > 1<<logCap {
			grew++
		}
		if res := porcupine.CheckOperationsTimeout(dequeModel, h, 10*time.Second); res != porcupine.Ok {
			t.Fatalf("history %d (seed %d, logCap %d) is %v:%s", i, seed, logCap, res, linDescribe(h))
		}
	}
	t.Logf("%d histories (%d grew the ring), %d ops, %d overlapping op pairs; "+
		"pop took %d / empty %d; steal took %d / empty %d / aborted %d",
		st.histories, grew, st.ops, st.overlapping, st.popTook, st.popEmpty, st.stealTook, st.stealEmpty, st.aborts)
	if st.histories != histories {
		t.Errorf("checked %d histories, want %d", st.histories, histories)
	}
}

// TestDequeModelRejects feeds fabricated histories to the checker: the
// model must accept the linearizable ones and reject the others, so a pass
// of TestDequeLinearizable means something.
func TestDequeModelRejects(t *testing.T) {
	// op builds an operation from a compact description.
	op := func(client int, call, ret int64, desc string) porcupine.Operation {
		var in linIn
		var out linOut
		switch {
		case strings.HasPrefix(desc, "push "):
			in = linIn{Op: linPush}
			fmt.Sscan(desc[5:], &in.V)
		default:
			name, res, _ := strings.Cut(desc, " ")
			in.Op = map[string]linOp{"pop": linPop, "steal": linSteal}[name]
			switch res {
			case "empty":
				out.Res = linEmpty
			case "abort":
				out.Res = linAbort
			default:
				fmt.Sscan(res, &out.V)
			}
		}
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	tests := []struct {
		name string
		ops  []porcupine.Operation
		want bool
	}{
		{"sequential lifo/fifo", []porcupine.Operation{
			op(0, 0, 1, "push 1"), op(0, 2, 3, "push 2"), op(0, 4, 5, "pop 2"), op(1, 6, 7, "steal 1"),
		}, true},
		{"pop takes oldest", []porcupine.Operation{
			op(0, 0, 1, "push 1"), op(0, 2, 3, "push 2"), op(0, 4, 5, "pop 1"),
		}, false},
		{"steal takes newest", []porcupine.Operation{
			op(0, 0, 1, "push 1"), op(0, 2, 3, "push 2"), op(1, 4, 5, "steal 2"),
		}, false},
		{"owner and thief both take the last element", []porcupine.Operation{
			op(0, 0, 1, "push 1"), op(0, 2, 6, "pop 1"), op(1, 3, 5, "steal 1"),
		}, false},
		{"two thieves take the same element", []porcupine.Operation{
			op(0, 0, 1, "push 1"), op(0, 2, 3, "push 2"), op(1, 4, 8, "steal 1"), op(2, 5, 7, "steal 1"),
		}, false},
		{"concurrent race for the last element, thief wins", []porcupine.Operation{
			op(0, 0, 1, "push 1"), op(0, 2, 6, "pop empty"), op(1, 3, 5, "steal 1"),
		}, true},
		{"concurrent race for the last element, owner wins", []porcupine.Operation{
			op(0, 0, 1, "push 1"), op(0, 2, 6, "pop 1"), op(1, 3, 5, "steal abort"),
		}, true},
		{"pop empty after the thief returned empty on a full deque", []porcupine.Operation{
			op(0, 0, 1, "push 1"), op(1, 2, 3, "steal empty"), op(0, 4, 5, "pop 1"),
		}, false},
		{"element lost", []porcupine.Operation{
			op(0, 0, 1, "push 1"), op(0, 2, 3, "pop empty"),
		}, false},
		{"abort leaves the element", []porcupine.Operation{
			op(0, 0, 1, "push 1"), op(1, 2, 3, "steal abort"), op(1, 4, 5, "steal 1"),
		}, true},
		{"steal returns before the push is called", []porcupine.Operation{
			op(1, 0, 1, "steal 1"), op(0, 2, 3, "push 1"),
		}, false},
		{"steal overlapping the push", []porcupine.Operation{
			op(1, 0, 3, "steal 1"), op(0, 2, 4, "push 1"),
		}, true},
	}
	for _, tt := range tests {
		if got := porcupine.CheckOperations(dequeModel, tt.ops); got != tt.want {
			t.Errorf("%s: linearizable = %v, want %v:%s", tt.name, got, tt.want, linDescribe(tt.ops))
		}
	}
}

// linBroken is a mutex-protected slice deque with one deliberate bug.
type linBroken struct {
	mu  sync.Mutex
	s   []*int
	bug string
}

func (b *linBroken) push(x *int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s = append(b.s, x)
}

func (b *linBroken) pop() *int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.s) == 0 {
		return nil
	}
	x := b.s[len(b.s)-1]
	b.s = b.s[:len(b.s)-1]
	return x
}

func (b *linBroken) steal() (*int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.s) == 0 {
		return nil, false
	}
	switch b.bug {
	case "steal newest":
		x := b.s[len(b.s)-1]
		b.s = b.s[:len(b.s)-1]
		return x, false
	case "steal keeps last": // the missing CAS on top: both sides get it
		if len(b.s) == 1 {
			return b.s[0], false
		}
	case "steal drops one": // takes the oldest but loses the next
		x := b.s[0]
		b.s = b.s[min(2, len(b.s)):]
		return x, false
	}
	x := b.s[0]
	b.s = b.s[1:]
	return x, false
}

// TestDequeLinearizableCatchesBugs runs deliberately broken deques through
// the same harness and requires the checker to reject some history of each.
func TestDequeLinearizableCatchesBugs(t *testing.T) {
	for _, bug := range []string{"steal newest", "steal keeps last", "steal drops one"} {
		t.Run(bug, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(len(bug)), 2))
			const tries = 3000
			for i := range tries {
				h := linHistory(rng, &linBroken{bug: bug}, linDefaultShape)
				if porcupine.CheckOperations(dequeModel, h) == false {
					t.Logf("caught after %d histories:%s", i+1, linDescribe(h))
					return
				}
			}
			t.Errorf("%d histories of a deque with bug %q all passed the check", tries, bug)
		})
	}
}

// linNoCASWindow is how many loop turns linNoCAS.steal idles between
// reading the element and committing, as a preemption there would.
const linNoCASWindow = 200

// linNoCAS is the real deque with the classic bug: Steal commits with a
// plain store to top where a CAS belongs, so a thief can take an element
// that the owner's Pop or another thief also takes.
type linNoCAS struct{ linReal }

func (b linNoCAS) steal() (*int, bool) {
	d := b.d
	t := d.top.Load()
	if t >= d.bottom.Load() {
		return nil, false
	}
	x := d.ring.Load().load(t)
	for range linNoCASWindow {
	}
	d.top.Store(t + 1) // the bug
	return x, false
}

// TestDequeLinearizableCatchesRace runs the real deque with a concurrency
// bug (Steal without its CAS) and requires the checker to catch it: this
// shows the histories really interleave owner and thieves.
func TestDequeLinearizableCatchesRace(t *testing.T) {
	if goruntime.GOMAXPROCS(0) < 2 {
		t.Skip("needs 2 CPUs for operations to overlap")
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	const tries = 30000
	for i := range tries {
		h := linHistory(rng, linNoCAS{linReal{newDeque[int](1)}}, linDefaultShape)
		if !porcupine.CheckOperations(dequeModel, h) {
			t.Logf("caught after %d histories:%s", i+1, linDescribe(h))
			return
		}
	}
	t.Errorf("%d histories of a deque whose Steal lacks the CAS all passed the check", tries)
}
