package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/numasteal/numasteal/launch"
)

// The launcher's cost: what numasteal-launch adds to one command, the
// issue of every compile a build runs through it. Each contender is run as
// a process, as make runs a recipe, in rounds (A B C ... A B C), from one
// harness whose own fork and wait are the same for all; a contender's
// figure is the median over the rounds, and an overhead is the median of
// the per-round differences with its plain command.

// LaunchCostOptions configures RunLaunchCost.
type LaunchCostOptions struct {
	// Launcher is the numasteal-launch binary.
	Launcher string
	// Numasteal is the numasteal binary: the daemon the launchers start,
	// and the "numasteal launch" contender.
	Numasteal string
	// Rounds is how many times each contender runs; 0 means 500.
	Rounds int
	// Dir is the work directory: the daemon's socket, the trivial C file.
	Dir string
	// CC is the compiler of the trivial compile; "" means gcc. The compile
	// rows are left out when it is not installed.
	CC string
	// Progress, when not nil, is called after each round.
	Progress func(round, rounds int)
}

// LaunchCostRow is one contender: its median wall time and the median CPU
// time (user+sys of its process tree) per run, in microseconds.
type LaunchCostRow struct {
	Name    string   `json:"name"`
	Command []string `json:"command"`
	WallUS  float64  `json:"wall_us"`
	P25US   float64  `json:"p25_us"`
	P75US   float64  `json:"p75_us"`
	CPUUS   float64  `json:"cpu_us"`
}

// LaunchCostResult is the table and the overheads derived from it.
type LaunchCostResult struct {
	Rounds int             `json:"rounds"`
	Rows   []LaunchCostRow `json:"rows"`
	// Overheads are the medians of per-round differences, launcher minus
	// plain, in microseconds, by name.
	Overheads map[string]float64 `json:"overheads_us"`
	// CompilePercent is the launcher's overhead on the trivial compile
	// as a percentage of that compile's median; 0 without a compiler.
	CompilePercent float64 `json:"compile_percent"`
}

// Launch-cost contender names, as in the rows.
const (
	lcTrue       = "true"
	lcFloor      = "numasteal-launch /bin/true, NUMASTEAL_LAUNCH=off (Go start, exec)"
	lcOff        = "numasteal-launch true, NUMASTEAL_LAUNCH=off (Go start, PATH search, exec)"
	lcHandoff    = "numasteal-launch true (handoff)"
	lcMeasured   = "numasteal-launch true (measured)"
	lcFull       = "numasteal launch true"
	lcCC         = "cc -c (trivial)"
	lcCCLaunched = "numasteal-launch cc -c (handoff)"
)

type lcContender struct {
	name string
	args []string
	env  []string
}

// RunLaunchCost measures the launcher's cost per command against plain
// commands, with a daemon of its own in o.Dir, stopped at the end.
func RunLaunchCost(ctx context.Context, o LaunchCostOptions) (*LaunchCostResult, error) {
	if o.Rounds <= 0 {
		o.Rounds = 500
	}
	for _, b := range []string{o.Launcher, o.Numasteal} {
		if st, err := os.Stat(b); err != nil || !st.Mode().IsRegular() {
			return nil, fmt.Errorf("bench: launch cost: %s is not a program", b)
		}
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		return nil, fmt.Errorf("bench: launch cost: %w", err)
	}
	sock := filepath.Join(o.Dir, "sock")
	if len(sock) > 100 {
		return nil, fmt.Errorf("bench: launch cost: socket path %s is too long for a Unix socket", sock)
	}
	base := append(os.Environ(), "NUMASTEAL_SOCKET="+sock, "NUMASTEAL_BIN="+o.Numasteal,
		"NUMASTEAL_SERVE_FLAGS=--idle 1m", "NUMASTEAL_BUILD=bench-launch", "NUMASTEAL_SLOT=", "NUMASTEAL_LAUNCH=")
	defer stopDaemon(launch.PathsFromEnv(func(k string) string {
		if k == "NUMASTEAL_SOCKET" {
			return sock
		}
		return ""
	}))
	cs := []lcContender{
		{lcTrue, []string{truePath}, nil},
		{lcFloor, []string{o.Launcher, truePath}, []string{"NUMASTEAL_LAUNCH=off"}},
		{lcOff, []string{o.Launcher, "true"}, []string{"NUMASTEAL_LAUNCH=off"}},
		{lcHandoff, []string{o.Launcher, "true"}, nil},
		{lcMeasured, []string{o.Launcher, "true"}, []string{"NUMASTEAL_MEASURE=1"}},
		{lcFull, []string{o.Numasteal, "launch", "true"}, nil},
	}
	cc := o.CC
	if cc == "" {
		cc = "gcc"
	}
	if ccPath, err := exec.LookPath(cc); err == nil {
		src := filepath.Join(o.Dir, "t.c")
		if err := os.WriteFile(src, []byte("int f(int x) { return x + 1; }\n"), 0o644); err != nil {
			return nil, fmt.Errorf("bench: launch cost: %w", err)
		}
		obj := filepath.Join(o.Dir, "t.o")
		cs = append(cs,
			lcContender{lcCC, []string{ccPath, "-c", src, "-o", obj}, nil},
			lcContender{lcCCLaunched, []string{o.Launcher, cc, "-c", src, "-o", obj}, nil})
	}
	// One untimed round starts the daemon and teaches it the outputs.
	for _, c := range cs {
		if _, _, err := runOnce(ctx, c, base, o.Dir); err != nil {
			return nil, err
		}
	}
	wall := make([][]float64, len(cs))
	cpu := make([][]float64, len(cs))
	for r := 0; r < o.Rounds; r++ {
		for i, c := range cs {
			w, u, err := runOnce(ctx, c, base, o.Dir)
			if err != nil {
				return nil, err
			}
			wall[i] = append(wall[i], w)
			cpu[i] = append(cpu[i], u)
		}
		if o.Progress != nil {
			o.Progress(r+1, o.Rounds)
		}
	}
	res := &LaunchCostResult{Rounds: o.Rounds, Overheads: map[string]float64{}}
	idx := map[string]int{}
	for i, c := range cs {
		idx[c.name] = i
		res.Rows = append(res.Rows, LaunchCostRow{
			Name: c.name, Command: c.args, WallUS: median(wall[i]),
			P25US: quantile(wall[i], 0.25), P75US: quantile(wall[i], 0.75), CPUUS: median(cpu[i]),
		})
	}
	diff := func(a, b string) (float64, bool) {
		ia, oka := idx[a]
		ib, okb := idx[b]
		if !oka || !okb {
			return 0, false
		}
		d := make([]float64, o.Rounds)
		for r := range d {
			d[r] = wall[ia][r] - wall[ib][r]
		}
		return median(d), true
	}
	for _, name := range []string{lcFloor, lcOff, lcHandoff, lcMeasured, lcFull} {
		res.Overheads[name], _ = diff(name, lcTrue)
	}
	if d, ok := diff(lcCCLaunched, lcCC); ok {
		res.Overheads[lcCCLaunched] = d
		if m := median(wall[idx[lcCC]]); m > 0 {
			res.CompilePercent = 100 * d / m
		}
	}
	return res, nil
}

// runOnce runs c once and returns its wall and CPU time in microseconds.
func runOnce(ctx context.Context, c lcContender, base []string, dir string) (wallUS, cpuUS float64, err error) {
	cmd := exec.CommandContext(ctx, c.args[0], c.args[1:]...)
	cmd.Env = append(base[:len(base):len(base)], c.env...)
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wallUS = float64(time.Since(start).Nanoseconds()) / 1e3
	if err != nil {
		return 0, 0, fmt.Errorf("bench: launch cost: %s: %w\n%s", strings.Join(c.args, " "), err, tail(out, 2000))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpuUS = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e3
	}
	return wallUS, cpuUS, nil
}
