package buildrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/farm"
	"github.com/numasteal/numasteal/proc"
	"github.com/numasteal/numasteal/runtime"
)

// Remote execution on a compile farm.
//
// A task may go to the farm when its command is a compiler invocation
// that turns one source into one object (farm.ParseCompile), or the graph
// marked it Remote and it still has that shape. The decision is taken in
// Run's loop, in the order the scheduler hands tasks out:
//
//  1. Local first. While the local runner has a free slot the task runs
//     here, as any other.
//  2. Otherwise the farm's best host with a free slot (farm.Acquire); if
//     none has one, the task queues locally after all.
//  3. Preprocess locally: the command with -E into a temporary .i file,
//     started on the local runner at once, so it holds a local slot in
//     the scheduler's order (distcc's plain mode preprocesses on the
//     client too; here that CPU time is accounted like any other).
//  4. Compile remotely: `distcc CC ... -c x.i -o x.o` on a second runner
//     whose slots are the farm's, with DISTCC_HOSTS naming the chosen host
//     alone with one slot, DISTCC_FALLBACK=0 (distcc must not quietly
//     compile locally instead) and DISTCC_SKIP_LOCAL_RETRY=1 (nor re-run a
//     failed remote compile locally on its own).
//  5. Faults. If the remote step fails for any reason, the original
//     command runs locally and its result is the task's: a build never
//     fails because a farm host died, and a genuine compile error is
//     reported by the local compiler. A failure is the host's fault (it
//     goes down with back-off) when distcc exits with one of its own codes
//     (100-127: connect failed, protocol error, timeout...), a signal, or
//     the remote step times out.

// FarmOptions send compiler invocations to a compile farm through distcc.
type FarmOptions struct {
	// Farm is the farm's placement state; required.
	Farm *farm.Farm
	// Distcc is the distcc client to run; "" means "distcc" from PATH.
	Distcc string
	// TempDir is where the preprocessed files go; "" means os.TempDir().
	TempDir string
	// Timeout bounds the remote step of a compile the history does not
	// know; 0 means Options.Timeout, or one minute without one. A compile
	// the history knows gets RemoteSlack times its local duration plus
	// 10 s, within that bound: a host that accepts the connection and
	// then never answers costs a job that long, not distcc's 300 s.
	Timeout time.Duration
}

// extraSlots is how many more tasks the scheduler may hand out than the
// local slots: the farm's slots, when there is a farm and a local limit.
func (o *FarmOptions) extraSlots(local int) int {
	if o == nil || o.Farm == nil || local <= 0 {
		return 0
	}
	return o.Farm.Slots()
}

// Exit codes distcc uses for its own errors (distcc(1), EXIT CODES).
const distccErrMin, distccErrMax = 100, 127

// farmExec is Run's farm executor; nil when Run has no farm.
type farmExec struct {
	opts    FarmOptions
	timeout time.Duration
	history *buildgraph.History // for the remote timeout of known compiles; may be nil
	remote  *proc.Runner
	trace   *buildgraph.TraceWriter
	dir     string // this run's directory of preprocessed files
	seq     atomic.Int64
	ran     sync.Map // *proc.Result → true for results that ran remotely
}

// newFarmExec returns nil, nil without a farm.
func newFarmExec(rt *runtime.Runtime, opts Options, pcfg proc.Config) (*farmExec, error) {
	if opts.Farm == nil || opts.Farm.Farm == nil {
		return nil, nil
	}
	fo := *opts.Farm
	if fo.Distcc == "" {
		fo.Distcc = "distcc"
	}
	x := &farmExec{opts: fo, timeout: fo.Timeout, trace: opts.Trace}
	if x.timeout <= 0 {
		x.timeout = opts.Timeout
	}
	if x.timeout <= 0 {
		x.timeout = time.Minute
	}
	x.history = opts.History
	dir, err := os.MkdirTemp(fo.TempDir, "numasteal-farm-")
	if err != nil {
		return nil, fmt.Errorf("buildrun: farm: %w", err)
	}
	x.dir = dir
	rcfg := proc.Config{Slots: fo.Farm.Slots(), Pin: proc.PinNone, Grace: pcfg.Grace,
		OutputLimit: pcfg.OutputLimit, SpillDir: pcfg.SpillDir, Supervisor: pcfg.Supervisor}
	if x.remote, err = proc.NewRunner(rt, rcfg); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("buildrun: farm: %w", err)
	}
	return x, nil
}

// close stops the remote runner and removes the temporary directory.
func (x *farmExec) close() {
	if x == nil {
		return
	}
	x.remote.Close()
	os.RemoveAll(x.dir)
}

// ranRemote reports whether res is a task's result that ran on the farm
// (its trace spans are written here, not on a CPU track), and forgets res.
func (x *farmExec) ranRemote(res *proc.Result) bool {
	if x == nil {
		return false
	}
	_, ok := x.ran.LoadAndDelete(res) // asked once per result, by build.finish
	return ok
}

// compileOf returns t's command as a farm compile, if it is one.
func compileOf(t *buildgraph.Task) (farm.Compile, bool) {
	if t.Slots() != 1 {
		return farm.Compile{}, false
	}
	argv := t.Cmd
	if argv == nil {
		w, err := buildgraph.SplitWords(t.Shell)
		if err != nil {
			return farm.Compile{}, false
		}
		argv = w
	}
	if t.Remote {
		return farm.ParseMarkedCompile(argv)
	}
	return farm.ParseCompile(argv)
}

// try sends t to the farm when it is a compile, the local slots are all
// taken and a host has a free one: it starts the local preprocessing now
// and the rest in a goroutine counted in wg, which reports to b.finish.
// It returns false when t is to run locally as usual.
func (x *farmExec) try(ctx context.Context, b *build, t *buildgraph.Task, cmd proc.Command, wg *sync.WaitGroup) bool {
	c, ok := compileOf(t)
	if !ok || b.runner.SlotsUsed() < b.runner.Slots() {
		return false
	}
	lease, ok := x.opts.Farm.Acquire(time.Now())
	if !ok {
		return false
	}
	pre := filepath.Join(x.dir, fmt.Sprintf("%d-%s%s", x.seq.Add(1), filepath.Base(c.Output), c.PreprocessedExt()))
	pcmd := cmd
	pcmd.Args = c.PreprocessArgs(pre)
	pp := b.runner.Start(ctx, pcmd)
	wg.Add(1)
	go func() {
		defer wg.Done()
		b.finish(t, x.run(ctx, b, t, c, cmd, lease, pp, pre), 0)
		b.next(ctx, wg, false)
	}()
	return true
}

// run waits for the preprocessing, compiles remotely and falls back to a
// local run of cmd when the remote step fails.
func (x *farmExec) run(ctx context.Context, b *build, t *buildgraph.Task, c farm.Compile, cmd proc.Command,
	lease farm.Lease, pp *proc.Process, pre string) *proc.Result {
	defer os.Remove(pre)
	pres := pp.Wait()
	if !pres.Success() {
		// A genuine error (a missing header) or cancellation: the
		// preprocessor's result is the task's.
		x.opts.Farm.Release(lease, farm.Outcome{}, time.Now())
		return pres
	}
	rcmd := cmd
	rcmd.Args = append([]string{x.opts.Distcc}, c.RemoteArgs(pre)...)
	// distcc's own back-off would make it refuse a host that numasteal's
	// scoring has found up again, and its I/O timeout is bounded by ours.
	timeout := x.remoteTimeout(t)
	rcmd.Env = append(envOf(cmd.Env), farm.EnvHosts+"="+lease.Host.DistccHosts(), "DISTCC_FALLBACK=0", "DISTCC_SKIP_LOCAL_RETRY=1",
		"DISTCC_BACKOFF_PERIOD=0", fmt.Sprintf("DISTCC_IO_TIMEOUT=%d", max(int(timeout/time.Second), 1)))
	rcmd.Timeout = timeout
	rres := x.remote.Start(ctx, rcmd).Wait()
	now := time.Now()

	if rres.Success() {
		var size int64
		out := c.Output
		if !filepath.IsAbs(out) {
			out = filepath.Join(t.Cwd, out)
		}
		if st, err := os.Stat(out); err == nil {
			size = st.Size()
		}
		x.opts.Farm.Release(lease, farm.Outcome{OK: true, Bytes: size, Elapsed: rres.Wall}, now)
		x.traceSpans(t, lease, pres, rres, "ok")
		merged := *rres
		merged.Args = cmd.Args
		merged.Start = pres.Start
		merged.Wall = merged.End.Sub(merged.Start)
		merged.User += pres.User
		merged.Sys += pres.Sys
		merged.CPU, merged.Node, merged.Affinity = pres.CPU, pres.Node, pres.Affinity
		pres.Close()
		x.ran.Store(&merged, true)
		return &merged
	}
	if rres.Outcome == proc.Canceled || ctx.Err() != nil {
		x.opts.Farm.Release(lease, farm.Outcome{}, now)
		pres.Close()
		return rres
	}
	fault := rres.TimedOut || rres.Signal != 0 || (rres.ExitCode >= distccErrMin && rres.ExitCode <= distccErrMax) || rres.Pid <= 0
	x.opts.Farm.Release(lease, farm.Outcome{HostFault: fault, Err: remoteError(lease, rres)}, now)
	x.traceSpans(t, lease, pres, rres, "failed, retried locally")
	pres.Close()
	rres.Close()
	// Retry here. The local slot is taken in the order of this moment,
	// behind the tasks already queued.
	return b.runner.Run(ctx, cmd)
}

// remoteError describes a failed remote step.
func remoteError(l farm.Lease, r *proc.Result) error {
	err := r.Err
	if err == nil {
		err = errors.New("failed")
	}
	switch {
	case r.TimedOut:
		return fmt.Errorf("%s: timed out: %w", l.Host.Addr(), err)
	case r.ExitCode >= distccErrMin && r.ExitCode <= distccErrMax:
		return fmt.Errorf("%s: distcc error exit %d: %w", l.Host.Addr(), r.ExitCode, err)
	}
	return fmt.Errorf("%s: %w", l.Host.Addr(), err)
}

// traceSpans records a farm task: its preprocessing on a slot track (its
// CPU and node in the args), the remote step on the host's track.
func (x *farmExec) traceSpans(t *buildgraph.Task, l farm.Lease, pres, rres *proc.Result, how string) {
	if x.trace == nil {
		return
	}
	x.trace.SlotSpan(t.TraceName()+" (preprocess)", pres.Start, pres.End,
		map[string]any{"pid": pres.Pid, "cpu": pres.CPU, "node": pres.Node, "host": l.Host.Addr(), "id": t.ID})
	if rres.Pid > 0 {
		x.trace.Span(x.trace.HostTrack(l.Host.Addr()), t.TraceName(), rres.Start, rres.End,
			map[string]any{"cmd": t.CommandLine(), "host": l.Host.Addr(), "result": how, "exit": rres.ExitCode})
	}
}

// RemoteSlack is how many times its local duration a remote compile the
// history knows may take before it is given up (plus 10 s for the
// transfer): remote hosts may be slower, but not by an order of magnitude.
const RemoteSlack = 4

// remoteTimeout bounds t's remote step: from the history when it knows t,
// else the farm's timeout.
func (x *farmExec) remoteTimeout(t *buildgraph.Task) time.Duration {
	if x.history != nil {
		if d, ok := x.history.Estimate(t); ok {
			return min(RemoteSlack*d+10*time.Second, x.timeout)
		}
	}
	return x.timeout
}

// envOf returns a copy of env to append to; nil means the caller's.
func envOf(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	return append([]string(nil), env...)
}
