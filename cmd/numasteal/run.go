package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/buildrun"
	"github.com/numasteal/numasteal/internal/gcfloor"
	"github.com/numasteal/numasteal/internal/oomscore"
	"github.com/numasteal/numasteal/jobserver"
	"github.com/numasteal/numasteal/proc"
	"github.com/numasteal/numasteal/runtime"
	"github.com/numasteal/numasteal/supervise"
)

// runUsage is the synopsis of "numasteal run".
const runUsage = `usage: numasteal run [flags] FILE

Runs a workload on the numasteal runtime, each command a process placed on
a CPU at fork time. FILE is a text file of shell commands (one per line), a
JSON build graph ({"tasks": [...], "pools": {...}}) or a clang compilation
database (compile_commands.json).

Exit status: 0 when every task succeeded, 1 when a task failed (or the run
was interrupted), 2 for bad input (nothing runs then).

flags:`

// runFlags are the parsed flags of "numasteal run".
type runFlags struct {
	jobs      int
	keepGoing bool
	dryRun    bool
	verbose   bool
	quiet     bool
	dir       string
	policy    string
	trace     string
	history   string
	format    string
	pin       string
	timeout   time.Duration
	grace     time.Duration
	memMB     int
	progress  string
	metrics   string
	jobserver jobserverFlags // run_jobserver.go
	farm      farmFlags      // run_farm.go
}

// runRun implements "numasteal run".
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f runFlags
	fs := newFlagSet("numasteal run", stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, runUsage)
		fs.PrintDefaults()
	}
	fs.IntVarP(&f.jobs, "jobs", "j", -1, "running `slots`; default the usable CPUs; 0 admits every task at once and still runs one per CPU")
	fs.BoolVarP(&f.keepGoing, "keep-going", "k", false, "keep going after a failure (only its dependents are skipped)")
	fs.BoolVarP(&f.dryRun, "dry-run", "n", false, "print the commands in the order they would start, and run none")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "print each command as it starts")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print the output of failed tasks only (at the end), not that of each task as it ends")
	fs.StringVarP(&f.dir, "directory", "C", "", "change to `DIR` before doing anything, as make -C does")
	fs.StringVar(&f.policy, "policy", balance.Names()[0], "stealing and placement policy: "+strings.Join(balance.Names(), ", "))
	fs.StringVar(&f.trace, "trace", "", "write a Chrome trace (Perfetto) of the run to this `file`")
	fs.StringVar(&f.history, "history", ".numasteal_history", "durations of earlier runs, read and updated (\"\" for none)")
	fs.StringVar(&f.format, "format", "auto", "workload format: auto, graph, compdb, commands")
	fs.StringVar(&f.pin, "pin", "cpu", "child affinity: cpu (the placed CPU), node (its NUMA node), none")
	fs.DurationVar(&f.timeout, "timeout", 0, "kill a task that runs longer than this (0: no limit)")
	fs.DurationVar(&f.grace, "grace", 2*time.Second, "how long an ended task has between SIGTERM and SIGKILL (a second interrupt kills at once)")
	fs.IntVar(&f.memMB, "mem", 0, "most memory (MB) the running tasks may declare together, and the run's memory budget (0: no limit but the cgroups' and the available memory)")
	fs.StringVar(&f.progress, "progress", "auto", "progress display: auto (a live line on a terminal), lines, none")
	fs.StringVar(&f.metrics, "metrics", "", "serve Prometheus metrics at http://`ADDR`/metrics during the run (host:port; :0 picks a port)")
	f.jobserver.define(fs)
	f.farm.define(fs)
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() != 1 {
		return usageError(fs, stderr, errors.New("want exactly one FILE"))
	}
	if f.dir != "" {
		// Absolute, for the cd lines of -n (run_dryrun.go).
		if abs, err := filepath.Abs(f.dir); err == nil {
			f.dir = abs
		}
		if err := os.Chdir(f.dir); err != nil {
			fmt.Fprintf(stderr, "numasteal run: -C: %v\n", err)
			return exitFail
		}
	}
	file := fs.Arg(0)
	if f.dir != "" && !filepath.IsAbs(file) {
		file = filepath.Join(f.dir, file) // named so in every message
	}
	in, code, ok := checkRun(&f, flagsSet(fs), file, stderr) // run_check.go
	if !ok {
		return code
	}
	g, hist := in.g, in.hist
	bad := func(err error) int {
		fmt.Fprintf(stderr, "numasteal run: %v\n", err)
		return exitUsage
	}
	policy, err := balance.ByName(f.policy)
	if err != nil {
		return bad(err)
	}
	pin, err := proc.ParsePinMode(f.pin)
	if err != nil {
		return bad(err)
	}
	if err := f.jobserver.check(); err != nil {
		return bad(err)
	}
	switch f.progress {
	case "auto", "lines", "none":
	default:
		return bad(fmt.Errorf("unknown --progress %q (want auto, lines or none)", f.progress))
	}

	if err := g.CheckPrograms(os.Getenv("PATH")); err != nil {
		return bad(err)
	}
	if f.dryRun {
		if err := dryRun(stdout, g, f, hist); err != nil { // run_dryrun.go
			return bad(err)
		}
		return exitOK
	}

	rt, err := runtime.New(runtime.Config{Policy: policy})
	if err != nil {
		fmt.Fprintf(stderr, "numasteal run: %v\n", err)
		return exitFail
	}
	defer rt.Close()
	ms, err := serveMetrics(f.metrics, rt, stderr) // run_metrics.go; nil without --metrics
	if err != nil {
		fmt.Fprintf(stderr, "numasteal run: %v\n", err)
		return exitFail
	}
	defer ms.close()
	if f.jobs < 0 {
		f.jobs = rt.Workers()
	}
	defer proc.SpareProcs(cmp.Or(f.jobs, rt.Workers()))()
	// A run's heap is small and its garbage steady (a few KiB a task):
	// no collection before 16 MiB, which stays inside the margin the
	// tasks' memory cgroup leaves this process (memory.TasksLimit).
	defer gcfloor.Keep(16 << 20)()
	var supHeld atomic.Pointer[supervise.Supervisor] // for the jobserver's token count
	js, err := openJobserver(f.jobserver, os.Environ(), f.jobs, rt.Workers(), stderr, func(n int) {
		if s := supHeld.Load(); s != nil {
			s.SetTokens(n)
		}
	}) // run_jobserver.go
	if err != nil {
		fmt.Fprintf(stderr, "numasteal run: %v\n", err)
		return exitFail
	}
	defer closeJobserver(js, stderr)
	mem := runMemory(f.memMB, stderr) // run_memory.go
	sup, err := newSupervisor(f.grace, js, mem)
	if err != nil {
		fmt.Fprintf(stderr, "numasteal run: %v\n", err)
		return exitFail
	}
	supHeld.Store(sup)
	if dir := js.TempDir(); dir != "" {
		sup.TempPath(dir) // a served FIFO's directory: the watchdog removes it if numasteal is killed
	}
	sig := signalsOf(ctx)
	sig.attach(sup) // a second interrupt kills at once; Ctrl-Z stops the tasks
	defer func() {
		sig.detach()
		if err := sup.Close(); err != nil {
			fmt.Fprintf(stderr, "numasteal run: %v\n", err)
		}
	}()
	rf, rfCode, ok := openFarm(ctx, f.farm, stderr) // run_farm.go
	if !ok {
		return rfCode
	}
	if rf != nil {
		ms.watchFarm(rf.farm)
	}

	start := time.Now()
	var trace *buildgraph.TraceWriter
	if f.trace != "" {
		trace = buildgraph.NewTraceWriter(start, "numasteal run "+file)
	}
	disp := newProgressDisplay(stdout, f.progress, f.quiet, f.verbose) // run_progress.go
	ms.watchMemory(mem)
	rep, err := buildrun.Run(ctx, rt, g, buildrun.Options{
		Slots:         f.jobs,
		MemMB:         f.memMB,
		KeepGoing:     f.keepGoing,
		Timeout:       f.timeout,
		History:       hist,
		Trace:         trace,
		Process:       proc.Config{Pin: pin, Grace: f.grace, Supervisor: sup},
		Jobserver:     js,
		Progress:      ms.progressed(disp.update),
		ProgressEvery: disp.every(),
		Started:       disp.started,
		Runner:        ms.watch,
		Farm:          rf.options(),
		Memory:        mem,
		// What the end needs of a task that succeeded is its count: its
		// output is printed when it is reported.
		ReleaseSucceeded: true,
	})
	if err != nil {
		var be *buildgraph.Error
		if errors.As(err, &be) {
			return bad(err)
		}
		fmt.Fprintf(stderr, "numasteal run: %v\n", err)
		return exitFail
	}
	defer rep.Close()
	disp.finish()

	code = exitOK
	if !rep.OK() {
		code = exitFail
	}
	printFailures(stderr, rep)
	printSummary(stdout, rep)
	printMemory(stdout, rep.Memory)
	rf.printStats(stdout)
	if hist != nil && in.saveHist {
		hist.Retain(g)
		if err := hist.Save(f.history); err != nil {
			// As when checkRun finds it cannot be saved: a warning.
			if e := errors.Unwrap(err); e != nil {
				err = e // the path is in the sentence already
			}
			fmt.Fprintf(stderr, "numasteal run: warning: the history %s was not saved (%v)\n", f.history, err)
		}
	}
	if trace != nil {
		if err := writeTrace(f.trace, trace); err != nil {
			fmt.Fprintf(stderr, "numasteal run: %v\n", err)
			code = exitFail
		}
	}
	if ctx.Err() != nil {
		var se *SignalError
		if cause := context.Cause(ctx); errors.As(cause, &se) {
			fmt.Fprintf(stderr, "numasteal run: %v\n", se)
		} else {
			fmt.Fprintf(stderr, "numasteal run: interrupted (%v)\n", cause)
		}
		code = exitFail
	}
	return code
}

// newSupervisor returns the Supervisor of a run: every task's processes,
// escaped ones included, end with the task (package supervise), orphans
// are reaped here, and a watchdog (this executable re-run, see main) ends
// them all, removes the run's temporary files and gives a parent make
// back the tokens js held, should numasteal itself be killed. With mem,
// the tasks run in a memory cgroup of their own where one can be made.
func newSupervisor(grace time.Duration, js *jobserver.Pool, mem *buildrun.MemoryOptions) (*supervise.Supervisor, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("the watchdog needs this executable: %w", err)
	}
	tokens, err := js.TokenFile()
	if err != nil {
		return nil, err
	}
	if tokens != nil {
		defer tokens.Close() // the watchdog has its own copy
	}
	return supervise.New(supervise.Options{Grace: grace, Subreaper: true, Watchdog: exe, WatchdogTokens: tokens,
		OOMScoreAdj: oomscore.Task, TaskMemoryLimit: mem.TaskMemoryLimit()})
}

// writeTrace writes the trace to path, never through a link planted there
// (TraceWriter.Save writes a new file and renames it over the path).
func writeTrace(path string, trace *buildgraph.TraceWriter) error {
	if err := trace.Save(path); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}
