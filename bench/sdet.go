package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/numasteal/numasteal/proc"
	"github.com/numasteal/numasteal/runtime"
)

// SDET: the seed's multi-user throughput benchmark. N concurrent "users"
// each run a script of short commands found on every Debian machine, over
// and over, for a fixed time; throughput is finished scripts per hour. The
// numasteal contender runs every command as a process task of the runtime
// (proc.Runner: placed at fork, pinned, reaped without spinning), with
// the Go Ps to spare that numasteal run gives its runner
// (proc.SpareProcs); the baseline runs the same commands from plain
// goroutines with os/exec, no placement. Contenders alternate point by
// point.

// sdetScript is the fixed mix, run in the script's own directory holding
// input.txt and small.c; an array, whose length sizes sdetTimes.
var sdetScript = [...][]string{
	{"cc", "-O1", "-c", "small.c", "-o", "small.o"},
	{"grep", "-c", "numasteal", "input.txt"},
	{"sort", "input.txt", "-o", "sorted.txt"},
	{"ls", "-l", "."},
	{"cp", "sorted.txt", "copy.txt"},
	{"sh", "-c", "cat copy.txt | wc -l"},
	{"rm", "-f", "copy.txt", "sorted.txt", "small.o"},
}

// SDETOptions configures RunSDET. Zero fields take defaults.
type SDETOptions struct {
	// Ns are the numbers of concurrent scripts; nil means 1, 2, 4, ..., 128.
	Ns []int
	// Duration is how long each contender runs at each N in each
	// repetition; 0 means 2 seconds.
	Duration time.Duration
	// Reps is the number of repetitions, each a pair of the two, which
	// runs first alternating; 0 means 4.
	Reps int
	// Slots is the proc.Runner's slots: 0 means one per worker (the
	// runtime's default), -1 one per script (N).
	Slots int
	// Dir is the scratch directory; "" means a temporary one.
	Dir string
	// Progress, when not nil, is called before each measurement.
	Progress func(SDETProgress)
}

// SDETProgress says which measurement is starting.
type SDETProgress struct {
	Contender string
	N         int
	Rep, Reps int
	Left      time.Duration
}

// SDETPoint is the result at one N.
type SDETPoint struct {
	N int `json:"n"`
	// Scripts per hour, mean over repetitions, and their std devs.
	BaselinePerHour     float64 `json:"baseline_per_hour"`
	BaselineStdPerHour  float64 `json:"baseline_std_per_hour"`
	NumastealPerHour    float64 `json:"numasteal_per_hour"`
	NumastealStdPerHour float64 `json:"numasteal_std_per_hour"`
	// Pct is numasteal's throughput as a percent of the baseline's: the
	// median over repetitions of the ratio within each (the two run one
	// after the other, in alternating order); PctMin and PctMax the range.
	Pct    float64 `json:"pct_of_baseline"`
	PctMin float64 `json:"pct_min"`
	PctMax float64 `json:"pct_max"`
	// Pcts is each repetition's ratio, in order, so that repetitions of
	// several runs can be pooled.
	Pcts []float64 `json:"pcts"`
	// BaselineSelfMS and NumastealSelfMS are the CPU time of this
	// process's own threads (the contender's Go side, not its commands)
	// per finished script, in milliseconds, over every repetition; 0
	// where the process's CPU clock cannot be read.
	BaselineSelfMS  float64 `json:"baseline_self_ms"`
	NumastealSelfMS float64 `json:"numasteal_self_ms"`
	// BaselineChildrenMS and NumastealChildrenMS are the CPU time of the
	// commands (this process's reaped children and their descendants) per
	// finished script, in milliseconds, over every repetition; 0 where it
	// cannot be read.
	BaselineChildrenMS  float64 `json:"baseline_children_ms"`
	NumastealChildrenMS float64 `json:"numasteal_children_ms"`
	// BaselineIdlePct and NumastealIdlePct are the share of the machine's
	// CPU time that was idle (or waiting for I/O) while each contender
	// ran, in percent, over every repetition; 0 where /proc/stat cannot
	// be read.
	BaselineIdlePct  float64 `json:"baseline_idle_pct"`
	NumastealIdlePct float64 `json:"numasteal_idle_pct"`
	// Commands is each command of the script, in order, with its mean
	// wall time under each contender (from the call to its result, over
	// every run of it in every repetition): where a difference in
	// throughput comes from.
	Commands []SDETCommand `json:"commands"`
}

// SDETCommand is one command of the script at one N.
type SDETCommand struct {
	Command     string  `json:"command"`
	BaselineUS  float64 `json:"baseline_us"`
	NumastealUS float64 `json:"numasteal_us"`
}

// sdetTimes sums the wall time of each command of the script and counts
// its runs (the scripts' goroutines add them), and sums over the
// measurements the process's own CPU time, its children's and the scripts
// they finished, and the machine's CPU time and the idle part of it
// (sdetMeasure adds them once its goroutines are done).
type sdetTimes struct {
	ns, runs       [len(sdetScript)]atomic.Int64
	self, children time.Duration
	scripts        int64
	cpuS, idleS    float64
}

// selfMS returns the process's own CPU time per finished script in
// milliseconds.
func (t *sdetTimes) selfMS() float64 { return t.perScriptMS(t.self) }

// childrenMS returns the commands' CPU time per finished script in
// milliseconds.
func (t *sdetTimes) childrenMS() float64 { return t.perScriptMS(t.children) }

func (t *sdetTimes) perScriptMS(d time.Duration) float64 {
	if t.scripts > 0 {
		return float64(d) / float64(t.scripts) / 1e6
	}
	return 0
}

// idlePct returns the idle share of the machine's CPU time in percent.
func (t *sdetTimes) idlePct() float64 {
	if t.cpuS > 0 {
		return 100 * t.idleS / t.cpuS
	}
	return 0
}

// mean returns command i's mean wall time in microseconds.
func (t *sdetTimes) mean(i int) float64 {
	if n := t.runs[i].Load(); n > 0 {
		return float64(t.ns[i].Load()) / float64(n) / 1e3
	}
	return 0
}

// SDETResult is a whole SDET run.
type SDETResult struct {
	Script    string      `json:"script"`
	DurationS float64     `json:"duration_s"`
	Reps      int         `json:"reps"`
	Workers   int         `json:"workers"`
	Slots     string      `json:"slots"`
	Points    []SDETPoint `json:"points"`
}

// RunSDET measures SDET throughput at each N for numasteal and the
// baseline.
func RunSDET(ctx context.Context, o SDETOptions) (*SDETResult, error) {
	if o.Ns == nil {
		o.Ns = []int{1, 2, 4, 8, 16, 32, 64, 128}
	}
	if o.Duration <= 0 {
		o.Duration = 2 * time.Second
	}
	if o.Reps <= 0 {
		o.Reps = 4
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "sdet-")
		if err != nil {
			return nil, fmt.Errorf("bench: sdet: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	maxN := 0
	for _, n := range o.Ns {
		maxN = max(maxN, n)
	}
	dirs, err := sdetDirs(dir, maxN)
	if err != nil {
		return nil, err
	}
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		return nil, fmt.Errorf("bench: sdet: %w", err)
	}
	defer rt.Close()
	res := &SDETResult{Script: sdetScriptText(), DurationS: o.Duration.Seconds(), Reps: o.Reps, Workers: rt.Workers()}
	switch {
	case o.Slots < 0:
		res.Slots = "N"
	case o.Slots == 0:
		res.Slots = fmt.Sprint(rt.Workers())
	default:
		res.Slots = fmt.Sprint(o.Slots)
	}
	total := len(o.Ns) * o.Reps * 2
	done := 0
	for _, n := range o.Ns {
		var base, ns, pct []float64
		var baseTimes, nsTimes sdetTimes
		for rep := range o.Reps {
			// A B, then B A: a drift of the host's speed within the pair
			// favours neither contender over the repetitions.
			order := []string{"baseline", "numasteal"}
			if rep%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			for _, contender := range order {
				if o.Progress != nil {
					o.Progress(SDETProgress{Contender: contender, N: n, Rep: rep + 1, Reps: o.Reps,
						Left: time.Duration(total-done) * o.Duration})
				}
				done++
				var perHour float64
				var err error
				if contender == "baseline" {
					perHour, err = sdetMeasure(ctx, n, o.Duration, dirs, execRun, &baseTimes)
				} else {
					slots := o.Slots
					if slots < 0 {
						slots = n
					}
					perHour, err = sdetNumasteal(ctx, rt, slots, n, o.Duration, dirs, &nsTimes)
				}
				if err != nil {
					return nil, err
				}
				if contender == "baseline" {
					base = append(base, perHour)
				} else {
					ns = append(ns, perHour)
				}
			}
			pct = append(pct, 100*ns[rep]/base[rep])
		}
		p := SDETPoint{N: n}
		p.BaselinePerHour, p.BaselineStdPerHour = meanStd(base)
		p.NumastealPerHour, p.NumastealStdPerHour = meanStd(ns)
		p.Pct, p.PctMin, p.PctMax, p.Pcts = median(pct), slices.Min(pct), slices.Max(pct), pct
		p.BaselineSelfMS, p.NumastealSelfMS = baseTimes.selfMS(), nsTimes.selfMS()
		p.BaselineChildrenMS, p.NumastealChildrenMS = baseTimes.childrenMS(), nsTimes.childrenMS()
		p.BaselineIdlePct, p.NumastealIdlePct = baseTimes.idlePct(), nsTimes.idlePct()
		for i, args := range sdetScript {
			p.Commands = append(p.Commands, SDETCommand{Command: shellJoin(args), BaselineUS: baseTimes.mean(i), NumastealUS: nsTimes.mean(i)})
		}
		res.Points = append(res.Points, p)
	}
	return res, nil
}

// sdetNumasteal measures n scripts whose commands run as process tasks of
// rt, through a runner with the given slots (0: one per worker).
func sdetNumasteal(ctx context.Context, rt *runtime.Runtime, slots, n int, d time.Duration, dirs []string, times *sdetTimes) (float64, error) {
	pr, err := proc.NewRunner(rt, proc.Config{Slots: slots})
	if err != nil {
		return 0, fmt.Errorf("bench: sdet: %w", err)
	}
	defer pr.Close()
	defer proc.SpareProcs(pr.Slots())()
	return sdetMeasure(ctx, n, d, dirs, func(ctx context.Context, args []string, dir string) error {
		r := pr.Run(ctx, proc.Command{Args: args, Dir: dir})
		defer r.Close()
		if !r.Success() {
			return fmt.Errorf("bench: sdet: %s: %s: %v", strings.Join(args, " "), r.Outcome, r.Err)
		}
		return nil
	}, times)
}

// execRun is the baseline: os/exec from the calling goroutine, output
// captured in memory like the runner's: stdout and stderr apart, a pipe
// each (one writer for both would let os/exec share one pipe, which a
// process task cannot do).
func execRun(ctx context.Context, args []string, dir string) error {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("bench: sdet: %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return nil
}

// sdetMeasure runs n scripts concurrently, each in its directory, starting
// new scripts until d has passed, and returns finished scripts per hour
// over the time until the last one ended; it adds each command's wall
// time, the process's own and its children's CPU time, the machine's CPU
// time and idle time and the scripts finished to times.
func sdetMeasure(ctx context.Context, n int, d time.Duration, dirs []string, run func(context.Context, []string, string) error, times *sdetTimes) (float64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		finished atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	cpu0, cpuOK := processCPU()
	kids0, kidsOK := childrenCPU()
	total0, idle0, machineOK := machineCPU()
	start := time.Now()
	deadline := start.Add(d)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && ctx.Err() == nil {
				for k, args := range sdetScript {
					t0 := time.Now()
					err := run(ctx, args, dirs[i])
					times.ns[k].Add(int64(time.Since(t0)))
					times.runs[k].Add(1)
					if err != nil {
						errOnce.Do(func() { firstErr = err; cancel() })
						return
					}
				}
				finished.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	perHour := float64(finished.Load()) / time.Since(start).Hours()
	// Each figure is taken only where every one can be read, so that they
	// all divide by the same scripts.
	cpu1, ok1 := processCPU()
	kids1, ok2 := childrenCPU()
	total1, idle1, ok3 := machineCPU()
	if cpuOK && kidsOK && machineOK && ok1 && ok2 && ok3 {
		times.self += cpu1 - cpu0
		times.children += kids1 - kids0
		times.cpuS += total1 - total0
		times.idleS += idle1 - idle0
		times.scripts += finished.Load()
	}
	return perHour, nil
}

// sdetDirs makes one directory per script with its input files.
func sdetDirs(root string, n int) ([]string, error) {
	var text strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&text, "line %05d %s %x\n", (i*7919)%2000, []string{"numasteal", "kernel", "sched", "steal"}[i%4], i*2654435761)
	}
	src := "int small(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * x; return s; }\n"
	dirs := make([]string, n)
	for i := range dirs {
		d := filepath.Join(root, fmt.Sprintf("user%03d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("bench: sdet: %w", err)
		}
		if err := os.WriteFile(filepath.Join(d, "input.txt"), []byte(text.String()), 0o644); err != nil {
			return nil, fmt.Errorf("bench: sdet: %w", err)
		}
		if err := os.WriteFile(filepath.Join(d, "small.c"), []byte(src), 0o644); err != nil {
			return nil, fmt.Errorf("bench: sdet: %w", err)
		}
		dirs[i] = d
	}
	return dirs, nil
}

func sdetScriptText() string {
	lines := make([]string, len(sdetScript))
	for i, a := range sdetScript {
		lines[i] = shellJoin(a)
	}
	return strings.Join(lines, "; ")
}

// meanStd returns the mean and the sample standard deviation of xs.
func meanStd(xs []float64) (mean, std float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(xs)-1))
}
