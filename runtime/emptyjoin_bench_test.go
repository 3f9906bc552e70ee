package runtime

import (
	"testing"
	"time"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// emptyJoins is the number of empty joins one layer of
// BenchmarkEmptyJoin times per round.
const emptyJoins = 1 << 16

// BenchmarkEmptyJoin times empty spawn+joins (both halves do nothing), the
// "empty spawn+join" of numasteal bench forkjoin --peers, emptyJoins per
// round in a loop inside one task, for each layer:
//
//	jobs1w    Jobs.Join on a one-worker runtime (its worker on the first
//	          usable CPU)
//	jobs1wLast  the same on the last usable CPU: the loop of jobsAll runs
//	          on whichever worker takes its task, and CPUs of a shared
//	          virtual machine need not run at the same speed
//	jobsAll   Jobs.Join on one worker per usable CPU: the others idle,
//	          searching or parked, so the joins' forks may be promoted
//	jobsAllEager  jobsAll with promote's back-off off: every fork made
//	          while a thief could use work is promoted
//	ctx1w     Ctx.Join of two empty functions, one worker
//	ctxAll    the same on one worker per usable CPU
//	ctxAllEager  ctxAll with the back-off off
//
// An op is one round: every layer once, in an order that rotates from
// round to round. It reports each layer's median ns per join in wall time
// (name-ns) and, for the one-worker layers, in the worker thread's CPU
// time (name-cpu-ns); for the others the median shares of joins whose
// fork was promoted (name-promoted) and stolen (name-stolen; the thieves'
// counts, which may lag by a fold):
//
//	go test -run '^$' -bench EmptyJoin -benchtime 40x ./runtime
func BenchmarkEmptyJoin(b *testing.B) {
	one, all := benchRuntime(b, 1), benchRuntime(b, 0)
	eager := benchRuntimeCfg(b, Config{promoteBackoff: -1})
	last := benchRuntimeCfg(b, Config{CPUs: cpuset.Of(all.workers[len(all.workers)-1].cpu)})
	type nop = struct{}
	body := func(*Ctx, nop) (nop, error) { return nop{}, nil }
	jobs1, jobsLast := NewJobs(one, body), NewJobs(last, body)
	jobsAll, jobsEager := NewJobs(all, body), NewJobs(eager, body)
	jobsLoop := func(js *Jobs[nop, nop]) func(c *Ctx) error {
		return func(c *Ctx) error {
			for range emptyJoins {
				if _, _, err := js.Join(c, nop{}, nop{}); err != nil {
					return err
				}
			}
			return nil
		}
	}
	ctxLoop := func(c *Ctx) error {
		for range emptyJoins {
			if err := c.Join(benchNop, benchNop); err != nil {
				return err
			}
		}
		return nil
	}
	layers := []struct {
		name   string
		rt     *Runtime
		loop   func(c *Ctx) error
		oneCPU bool
	}{
		{"jobs1w", one, jobsLoop(jobs1), true},
		{"jobs1wLast", last, jobsLoop(jobsLast), true},
		{"jobsAll", all, jobsLoop(jobsAll), false},
		{"jobsAllEager", eager, jobsLoop(jobsEager), false},
		{"ctx1w", one, ctxLoop, true},
		{"ctxAll", all, ctxLoop, false},
		{"ctxAllEager", eager, ctxLoop, false},
	}
	wall := make([][]float64, len(layers))
	cpu := make([][]float64, len(layers))
	promoted := make([][]float64, len(layers))
	stolen := make([][]float64, len(layers))
	round := 0
	for b.Loop() {
		for k := range layers {
			i := (k + round) % len(layers)
			l := &layers[i]
			s0 := l.rt.Stats().Total.StolenFrom
			err := onWorker(l.rt, func(c *Ctx) error {
				p0 := c.w.cnt.promoted
				c0, t0 := threadCPU(), time.Now()
				err := l.loop(c)
				d, dc := time.Since(t0), threadCPU()-c0
				wall[i] = append(wall[i], float64(d)/emptyJoins)
				cpu[i] = append(cpu[i], float64(dc)/emptyJoins)
				promoted[i] = append(promoted[i], float64(c.w.cnt.promoted-p0)/emptyJoins)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			stolen[i] = append(stolen[i], float64(l.rt.Stats().Total.StolenFrom-s0)/emptyJoins)
		}
		round++
	}
	for i, l := range layers {
		b.ReportMetric(median(wall[i]), l.name+"-ns")
		if l.oneCPU {
			b.ReportMetric(median(cpu[i]), l.name+"-cpu-ns")
		} else {
			b.ReportMetric(median(promoted[i]), l.name+"-promoted")
			b.ReportMetric(median(stolen[i]), l.name+"-stolen")
		}
	}
}
