package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"syscall"
	"time"
)

// kernbench: the seed's kernel-build benchmark on a corpus of real
// compiles. Every runner gets the same commands and is run as a process,
// measured the same way: wall clock from fork to reap, user and system time
// of the whole process tree from wait4's rusage (each runner reaps its own
// children, so their time is in it; numasteal run is a child subreaper, so
// orphans are too).

// Kernbench runner names, as in the JSON rows.
const (
	RunnerNumasteal = "numasteal"
	RunnerMake      = "make"
	RunnerNinja     = "ninja"
	RunnerXargs     = "xargs"
)

// KernbenchJobs are the -j levels: 2×CPUs, 16×CPUs and unlimited.
var KernbenchJobs = []string{"2x", "16x", "max"}

// KernbenchOptions configures RunKernbench.
type KernbenchOptions struct {
	// Corpus is the build, its files already on disk (Corpus.Dir set).
	Corpus *Corpus
	// Numasteal is the numasteal binary to run as `numasteal run`.
	Numasteal string
	// Reps is how many times each runner and -j level runs; 0 means 3.
	Reps int
	// CPUs scales the -j levels; 0 means the CPUs this process may use.
	CPUs int
	// Runners restricts the runners (nil: all four); a runner whose program
	// is not installed is skipped and named in the result.
	Runners []string
	// Jobs restricts the -j levels (nil: KernbenchJobs).
	Jobs []string
	// Trace, when set, is where the last numasteal run at max writes its
	// Chrome trace (for TimelineSVG).
	Trace string
	// Progress, when not nil, is called before each run.
	Progress func(KernbenchProgress)
}

// KernbenchProgress says which run is starting and how long the rest
// should take.
type KernbenchProgress struct {
	Runner, Jobs string
	Rep, Reps    int
	Run, Runs    int           // this run (from 1) of all runs
	Left         time.Duration // estimated from the runs so far; 0 before the first ends
}

// KernbenchRow is the medians of one runner at one -j level.
type KernbenchRow struct {
	Runner   string  `json:"runner"`
	Jobs     string  `json:"jobs"`
	J        int     `json:"j"` // the -j value passed; 0 means unlimited
	ElapsedS float64 `json:"elapsed_s"`
	UserS    float64 `json:"user_s"`
	SysS     float64 `json:"sys_s"`
	CPUPct   float64 `json:"cpu_pct"`
	Runs     int     `json:"runs"`
}

// KernbenchResult is a whole kernbench.
type KernbenchResult struct {
	Corpus   string         `json:"corpus"`
	Tasks    int            `json:"tasks"`
	Compiles int            `json:"compiles"`
	CPUs     int            `json:"cpus"`
	Reps     int            `json:"reps"`
	Skipped  []string       `json:"skipped,omitempty"`
	Rows     []KernbenchRow `json:"rows"`
}

// Row returns the row of runner at jobs, if it ran.
func (r *KernbenchResult) Row(runner, jobs string) (KernbenchRow, bool) {
	for _, row := range r.Rows {
		if row.Runner == runner && row.Jobs == jobs {
			return row, true
		}
	}
	return KernbenchRow{}, false
}

// jobsValue turns a level into the -j value for cpus: 0 for max.
func jobsValue(level string, cpus int) (int, error) {
	switch level {
	case "2x":
		return 2 * cpus, nil
	case "16x":
		return 16 * cpus, nil
	case "max":
		return 0, nil
	}
	return 0, fmt.Errorf("bench: unknown -j level %q (want 2x, 16x or max)", level)
}

// kbConfig is one runner at one -j level.
type kbConfig struct {
	runner, jobs string
	j            int
}

// RunKernbench builds o.Corpus Reps times with every runner at every -j
// level, alternating configurations run by run and cleaning the outputs
// before each run, and returns the medians.
func RunKernbench(ctx context.Context, o KernbenchOptions) (*KernbenchResult, error) {
	c := o.Corpus
	if c == nil || c.Dir == "" {
		return nil, errors.New("bench: kernbench needs a corpus on disk")
	}
	if o.Reps <= 0 {
		o.Reps = 3
	}
	if o.CPUs <= 0 {
		o.CPUs = goruntime.NumCPU()
	}
	if o.Runners == nil {
		o.Runners = []string{RunnerNumasteal, RunnerMake, RunnerNinja, RunnerXargs}
	}
	if o.Jobs == nil {
		o.Jobs = KernbenchJobs
	}
	res := &KernbenchResult{Corpus: c.Name, Tasks: len(c.Tasks), Compiles: c.Compiles(), CPUs: o.CPUs, Reps: o.Reps}
	files, err := writeRunnerFiles(c)
	if err != nil {
		return nil, err
	}
	var configs []kbConfig
	for _, jobs := range o.Jobs {
		j, err := jobsValue(jobs, o.CPUs)
		if err != nil {
			return nil, err
		}
		for _, r := range o.Runners {
			if !runnerAvailable(r, o.Numasteal) {
				if jobs == o.Jobs[0] {
					res.Skipped = append(res.Skipped, r)
				}
				continue
			}
			configs = append(configs, kbConfig{r, jobs, j})
		}
	}
	type sample struct{ elapsed, user, sys []float64 }
	samples := make([]sample, len(configs))
	total := len(configs) * o.Reps
	start := time.Now()
	for rep := range o.Reps {
		for i, cfg := range configs {
			done := rep*len(configs) + i
			if o.Progress != nil {
				p := KernbenchProgress{Runner: cfg.runner, Jobs: cfg.jobs, Rep: rep + 1, Reps: o.Reps, Run: done + 1, Runs: total}
				if done > 0 {
					p.Left = time.Since(start) / time.Duration(done) * time.Duration(total-done)
				}
				o.Progress(p)
			}
			trace := ""
			if o.Trace != "" && rep == o.Reps-1 && cfg.runner == RunnerNumasteal && cfg.jobs == "max" {
				trace = o.Trace
			}
			m, err := runBuild(ctx, c, files, o.Numasteal, cfg, trace)
			if err != nil {
				return nil, err
			}
			s := &samples[i]
			s.elapsed = append(s.elapsed, m.elapsed)
			s.user = append(s.user, m.user)
			s.sys = append(s.sys, m.sys)
		}
	}
	for i, cfg := range configs {
		s := samples[i]
		row := KernbenchRow{
			Runner: cfg.runner, Jobs: cfg.jobs, J: cfg.j, Runs: len(s.elapsed),
			ElapsedS: median(s.elapsed), UserS: median(s.user), SysS: median(s.sys),
		}
		cpu := make([]float64, len(s.elapsed))
		for k := range cpu {
			if s.elapsed[k] > 0 {
				cpu[k] = 100 * (s.user[k] + s.sys[k]) / s.elapsed[k]
			}
		}
		row.CPUPct = median(cpu)
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// runnerFiles are the corpus in each runner's language.
type runnerFiles struct{ graph, makefile, ninja, xargs, history string }

func writeRunnerFiles(c *Corpus) (runnerFiles, error) {
	dir := filepath.Join(c.Dir, ".kernbench")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return runnerFiles{}, fmt.Errorf("bench: %w", err)
	}
	f := runnerFiles{
		graph: filepath.Join(dir, "graph.json"), makefile: filepath.Join(dir, "Makefile"),
		ninja: filepath.Join(dir, "build.ninja"), xargs: filepath.Join(dir, "xargs.sh"),
		history: filepath.Join(dir, "numasteal_history"),
	}
	for path, write := range map[string]func(*bytes.Buffer) error{
		f.graph:    func(b *bytes.Buffer) error { return c.WriteGraph(b) },
		f.makefile: func(b *bytes.Buffer) error { return c.WriteMakefile(b) },
		f.ninja:    func(b *bytes.Buffer) error { return c.WriteNinja(b) },
		f.xargs:    func(b *bytes.Buffer) error { return c.WriteXargs(b) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			return runnerFiles{}, err
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return runnerFiles{}, fmt.Errorf("bench: %w", err)
		}
	}
	return f, nil
}

func runnerAvailable(runner, numasteal string) bool {
	prog := map[string]string{RunnerNumasteal: numasteal, RunnerMake: "make", RunnerNinja: "ninja", RunnerXargs: "xargs"}[runner]
	if prog == "" {
		return false
	}
	_, err := exec.LookPath(prog)
	return err == nil
}

// runnerArgs is the command line of a runner at -j j (0: unlimited).
func runnerArgs(f runnerFiles, numasteal string, cfg kbConfig, trace string) []string {
	js := strconv.Itoa(cfg.j)
	switch cfg.runner {
	case RunnerNumasteal:
		a := []string{numasteal, "run", "-j", js, "--progress", "none", "--history", f.history}
		if trace != "" {
			a = append(a, "--trace", trace)
		}
		return append(a, f.graph)
	case RunnerMake:
		if cfg.j == 0 {
			return []string{"make", "-r", "-s", "-f", f.makefile, "-j"}
		}
		return []string{"make", "-r", "-s", "-f", f.makefile, "-j", js}
	case RunnerNinja:
		return []string{"ninja", "-f", f.ninja, "-j", js}
	case RunnerXargs:
		return []string{"sh", f.xargs, js}
	}
	return nil
}

// buildMeasure is one build's wall, user and system seconds.
type buildMeasure struct{ elapsed, user, sys float64 }

// runBuild cleans the corpus and builds it once with cfg.
func runBuild(ctx context.Context, c *Corpus, f runnerFiles, numasteal string, cfg kbConfig, trace string) (buildMeasure, error) {
	if err := c.Clean(); err != nil {
		return buildMeasure{}, err
	}
	args := runnerArgs(f, numasteal, cfg, trace)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = c.Dir
	var out tailBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start).Seconds()
	if err != nil {
		return buildMeasure{}, fmt.Errorf("bench: %s -j %s building %s: %w\n%s", cfg.runner, cfg.jobs, c.Name, err, out.String())
	}
	for _, s := range c.sinks() {
		if _, err := os.Stat(filepath.Join(c.Dir, s)); err != nil {
			return buildMeasure{}, fmt.Errorf("bench: %s -j %s did not build %s: %w", cfg.runner, cfg.jobs, s, err)
		}
	}
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	m := buildMeasure{elapsed: elapsed}
	if ru != nil {
		m.user = float64(ru.Utime.Nano()) / 1e9
		m.sys = float64(ru.Stime.Nano()) / 1e9
	}
	return m, nil
}

// tailBuffer keeps the last 8 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 8192 {
		t.b = append(t.b[:0], t.b[len(t.b)-8192:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }
