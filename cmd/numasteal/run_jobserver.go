package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"sync"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/jobserver"
	"github.com/numasteal/numasteal/proc"
)

// The GNU make jobserver side of "numasteal run" (package jobserver).
//
// Two modes, chosen once per run by openJobserver:
//
//   - Client: MAKEFLAGS names a jobserver (numasteal is a recipe of make
//     -jN, or a task of another numasteal). numasteal keeps its implicit
//     slot and takes a token before forking each further task (Admit),
//     writing it back when the task's process group is gone: after
//     success, failure, timeout or cancellation. Client.Close, run when
//     the command returns (also after SIGINT), writes back whatever is
//     still held. -j 0 then admits every task and lets the tokens decide.
//     A jobserver that cannot be used is reported once and numasteal runs
//     with its own -j.
//   - Server (--jobserver, no usable jobserver inherited): numasteal
//     creates a jobserver of N = -j slots (N−1 tokens) and takes the slots
//     of its own tasks from the server's client, so that its tasks and the
//     make or numasteal children they run share N slots.
//
// Either way every task's child gets the jobserver through MAKEFLAGS and
// inherited descriptors (proc.Config.Prepare): the task's slot is the
// child's implicit one.
//
// Token recovery (server mode): a child killed while it holds tokens never
// writes them back. Server.Started is counted once a task holds its slot and
// Server.Exited once its process group is gone (in the Admit release, which
// the runner calls after the reap, also for a task whose fork failed — the
// Reaped hook is not called then, and a Started never matched by an Exited
// would block recovery for the rest of the run). When the last counted task
// exits, the server refills the pipe; the recovered count is reported on
// stderr at the end of the run.

// jobserverFlags are the jobserver flags of "numasteal run".
type jobserverFlags struct {
	serve bool   // --jobserver
	style string // --jobserver-style
}

// define adds the jobserver flags to fs.
func (jf *jobserverFlags) define(fs *flag.FlagSet) {
	fs.BoolVar(&jf.serve, "jobserver", false, "serve a GNU make jobserver of -j slots to the tasks' children (MAKEFLAGS), shared with numasteal's own tasks; under a make jobserver numasteal joins that one instead")
	fs.StringVar(&jf.style, "jobserver-style", "pipe", "jobserver form with --jobserver: pipe (every make) or fifo (make ≥ 4.4, numasteal)")
}

// runJobserver is the jobserver of one run. A nil *runJobserver is valid and
// does nothing: the run has no jobserver.
type runJobserver struct {
	server *jobserver.Server // server mode; nil in client mode
	client *jobserver.Client // where tasks take their slots

	mu      sync.Mutex
	relErr  error // first failed Release, reported by finish
	relErrN int   // failed Releases
}

// openJobserver sets up the jobserver of a run: it joins the one named by
// env's MAKEFLAGS, else serves one when jf.serve is set. jobs is the -j
// value (-1 when not given), cpus the default -j, g the workload. It
// returns the -j the run should use (client mode with -j 0: as many as the
// jobserver has slots, since the tokens bound the run), and reports an
// unusable inherited jobserver once on stderr. ok is false (with code) when
// the run must stop.
func openJobserver(jf jobserverFlags, env []string, jobs, cpus int, g *buildgraph.Graph, stderr io.Writer) (js *runJobserver, slots, code int, ok bool) {
	if jf.style != "pipe" && jf.style != "fifo" {
		fmt.Fprintf(stderr, "numasteal run: unknown --jobserver-style %q (want pipe or fifo)\n", jf.style)
		return nil, 0, exitUsage, false
	}
	local := jobs
	if local < 0 {
		local = cpus
	}
	c, err := jobserver.FromEnv(env)
	switch {
	case err == nil:
		slots := local
		if jobs == 0 {
			slots = clientSlots(c.Auth().Jobs, g)
		}
		return &runJobserver{client: c}, slots, exitOK, true
	case errors.Is(err, jobserver.ErrNoJobserver):
	default:
		// Reported once: numasteal opens the jobserver once per run.
		fmt.Fprintf(stderr, "numasteal run: %v; using -j %d\n", err, local)
	}
	if !jf.serve {
		return nil, local, exitOK, true
	}
	n := local
	if n < 1 {
		n = max(cpus, 1) // -j 0: admit everything, serve one slot per CPU
	}
	var opts []jobserver.Option
	if jf.style == "fifo" {
		opts = append(opts, jobserver.WithFIFO(""))
	}
	s, err := jobserver.NewServer(n, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "numasteal run: %v\n", err)
		return nil, 0, exitFail, false
	}
	return &runJobserver{server: s, client: s.Client()}, local, exitOK, true
}

// clientSlots is the process runner's size for -j 0 under a jobserver of
// jobs slots (0 or -1: unknown): enough that only the tokens limit the run,
// and at least the largest task's slots (buildgraph rejects bigger tasks).
func clientSlots(jobs int, g *buildgraph.Graph) int {
	n := jobs
	if n <= 0 {
		n = len(g.Tasks)
	}
	for _, t := range g.Tasks {
		n = max(n, t.Slots())
	}
	return min(max(n, 1), jobserver.MaxSlots)
}

// process returns cfg with the jobserver hooks set: Admit takes the task's
// slot from the jobserver, Prepare exports the jobserver to the child.
func (j *runJobserver) process(cfg proc.Config) proc.Config {
	if j == nil {
		return cfg
	}
	cfg.Admit = j.admit
	cfg.Prepare = func(c *exec.Cmd) error { return j.client.Prepare(c) }
	return cfg
}

// admit takes one slot for a task (the implicit slot first, then tokens)
// and counts the task as a jobserver child until release, which the runner
// calls once the task's process group is gone, whatever its outcome.
func (j *runJobserver) admit(ctx context.Context) (func(), error) {
	tok, err := j.client.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("jobserver: %w", err)
	}
	if j.server != nil {
		j.server.Started()
	}
	return func() {
		if j.server != nil {
			j.server.Exited() // may refill tokens the child died holding
		}
		if err := j.client.Release(tok); err != nil {
			j.mu.Lock()
			if j.relErr == nil {
				j.relErr = err
			}
			j.relErrN++
			j.mu.Unlock()
		}
	}, nil
}

// finish closes the jobserver once every task is gone (writing back any
// token still held, also after SIGINT) and reports on stderr the tokens
// recovered from killed children and any failed write-back.
func (j *runJobserver) finish(stderr io.Writer) {
	if j == nil {
		return
	}
	if j.server != nil {
		if st, err := j.server.Stats(); err == nil && (st.Recovered > 0 || st.Drained > 0) {
			drained := ""
			if st.Drained > 0 {
				drained = fmt.Sprintf(", drained %d surplus", st.Drained)
			}
			fmt.Fprintf(stderr, "numasteal run: jobserver: recovered %d tokens lost by killed children%s (%d slots)\n",
				st.Recovered, drained, st.Slots)
		}
	}
	j.mu.Lock()
	if j.relErr != nil {
		fmt.Fprintf(stderr, "numasteal run: %d jobserver tokens not written back: %v\n", j.relErrN, j.relErr)
	}
	j.mu.Unlock()
	var err error
	if j.server != nil {
		err = j.server.Close()
	} else {
		err = j.client.Close()
	}
	if err != nil {
		fmt.Fprintf(stderr, "numasteal run: closing the jobserver: %v\n", err)
	}
}
