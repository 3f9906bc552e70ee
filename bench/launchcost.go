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
// the per-round differences with its plain command. Two floors stand
// beside the launcher, built by the benchmark: a C program and a Go
// program that do nothing but exec their arguments (the program by its
// path), so that what a launcher in Go costs at least, and what numasteal
// adds to that, show apart.

// LaunchCostOptions configures RunLaunchCost.
type LaunchCostOptions struct {
	// Launcher is the numasteal-launch binary.
	Launcher string
	// Numasteal is the numasteal binary: the daemon the launchers start,
	// and the "numasteal launch" contender.
	Numasteal string
	// Rounds is how many times each contender runs; 0 means 500.
	Rounds int
	// Dir is the work directory: the daemon's socket, the trivial C file,
	// the floors.
	Dir string
	// CC is the compiler of the trivial compile and of the C floor; ""
	// means gcc. The compile rows and the C floor are left out when it is
	// not installed.
	CC string
	// Go is the go command that builds the Go floor; "" means go in PATH.
	// The Go floor is left out when there is none.
	Go string
	// Progress, when not nil, is called after each round.
	Progress func(round, rounds int)
}

// LaunchCostRow is one contender: its median wall time and quartiles, and
// the median CPU time (user+sys of its process tree) per run, in
// microseconds.
type LaunchCostRow struct {
	Name    string   `json:"name"`
	Command []string `json:"command"`
	WallUS  float64  `json:"wall_us"`
	P25US   float64  `json:"p25_us"`
	P75US   float64  `json:"p75_us"`
	CPUUS   float64  `json:"cpu_us"`
}

// LaunchCostShare is one contender's time over the trivial compile, as a
// percentage of the compile's median: the median and quartiles of the
// per-round differences.
type LaunchCostShare struct {
	Name   string  `json:"name"`
	Median float64 `json:"median_percent"`
	P25    float64 `json:"p25_percent"`
	P75    float64 `json:"p75_percent"`
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
	// CompileUS is the trivial compile's median, in microseconds; 0
	// without a compiler.
	CompileUS float64 `json:"compile_us,omitempty"`
	// OverCompile are the C floor, the Go floor and the launcher in front
	// of the trivial compile, each as a percentage of it; empty without a
	// compiler.
	OverCompile []LaunchCostShare `json:"over_compile,omitempty"`
	// OwnPoints is numasteal's own work per launch: the launcher less the
	// Go floor in front of the trivial compile, in points of that
	// compile's median (per-round differences); zero without a compiler
	// or a go command.
	OwnPoints *LaunchCostShare `json:"own_points,omitempty"`
	// OwnTrueUS is numasteal's own work per launch measured on
	// /bin/true, where the command's own time varies least: the handoff
	// less the Go floor, the median and quartiles of the per-round
	// differences, in microseconds; zero without a go command.
	OwnTrueUS [3]float64 `json:"own_true_us,omitempty"`
	// Missing says which rows were left out, and why.
	Missing []string `json:"missing,omitempty"`
}

// Launch-cost contender names, as in the rows.
const (
	lcTrue       = "true"
	lcCTrue      = "exec-only C program /bin/true (C start, exec)"
	lcGoTrue     = "exec-only Go program /bin/true (Go start, exec)"
	lcOff        = "numasteal-launch true, NUMASTEAL_LAUNCH=off (Go start, signals, PATH search, exec)"
	lcHandoff    = "numasteal-launch true (handoff)"
	lcMeasured   = "numasteal-launch true (measured)"
	lcFull       = "numasteal launch true"
	lcCC         = "cc -c (trivial)"
	lcCCC        = "exec-only C program cc -c"
	lcCCGo       = "exec-only Go program cc -c"
	lcCCLaunched = "numasteal-launch cc -c (handoff)"
)

type lcContender struct {
	name string
	args []string
	env  []string
}

// The floors' sources: exec argv[1] with the rest as its arguments.
const (
	floorC = `#include <unistd.h>
int main(int argc, char **argv) { if (argc > 1) execv(argv[1], argv + 1); return 127; }
`
	floorGo = `package main

import (
	"os"
	"syscall"
)

func main() {
	if len(os.Args) > 1 {
		syscall.Exec(os.Args[1], os.Args[1:], os.Environ())
	}
	os.Exit(127)
}
`
)

// buildFloors builds the exec-only C and Go programs into dir/floor with
// cc and gocmd; a path is "" when its toolchain is missing, with why in
// missing.
func buildFloors(ctx context.Context, dir, cc, gocmd string) (cFloor, goFloor string, missing []string, err error) {
	fdir := filepath.Join(dir, "floor")
	if err := os.MkdirAll(fdir, 0o755); err != nil {
		return "", "", nil, fmt.Errorf("bench: launch cost: %w", err)
	}
	run := func(name string, args []string, env ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = fdir
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("bench: launch cost: building a floor: %s %s: %w\n%s", name, strings.Join(args, " "), err, tail(out, 2000))
		}
		return nil
	}
	if ccPath, lerr := exec.LookPath(cc); lerr != nil {
		missing = append(missing, "the C floor and the compile rows: no "+cc)
	} else {
		if err := os.WriteFile(filepath.Join(fdir, "floor.c"), []byte(floorC), 0o644); err != nil {
			return "", "", nil, fmt.Errorf("bench: launch cost: %w", err)
		}
		if err := run(ccPath, []string{"-O2", "-o", "cexec", "floor.c"}); err != nil {
			return "", "", nil, err
		}
		cFloor = filepath.Join(fdir, "cexec")
	}
	if goPath, lerr := exec.LookPath(gocmd); lerr != nil {
		missing = append(missing, "the Go floor: no "+gocmd+" command")
	} else {
		for name, text := range map[string]string{"main.go": floorGo, "go.mod": "module floor\n"} {
			if err := os.WriteFile(filepath.Join(fdir, name), []byte(text), 0o644); err != nil {
				return "", "", nil, fmt.Errorf("bench: launch cost: %w", err)
			}
		}
		// Built as the launcher is: static (no cgo), with its symbols.
		if err := run(goPath, []string{"build", "-o", "goexec", "."}, "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOFLAGS="); err != nil {
			return "", "", nil, err
		}
		goFloor = filepath.Join(fdir, "goexec")
	}
	return cFloor, goFloor, missing, nil
}

// RunLaunchCost measures the launcher's cost per command against plain
// commands and the floors, with a daemon of its own in o.Dir, stopped at
// the end.
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
	cc := o.CC
	if cc == "" {
		cc = "gcc"
	}
	gocmd := o.Go
	if gocmd == "" {
		gocmd = "go"
	}
	cFloor, goFloor, missing, err := buildFloors(ctx, o.Dir, cc, gocmd)
	if err != nil {
		return nil, err
	}
	base := append(os.Environ(), "NUMASTEAL_SOCKET="+sock, "NUMASTEAL_BIN="+o.Numasteal,
		"NUMASTEAL_SERVE_FLAGS=--idle 1m", "NUMASTEAL_BUILD=bench-launch", "NUMASTEAL_SLOT=", "NUMASTEAL_LAUNCH=")
	defer stopDaemon(launch.PathsFromEnv(func(k string) string {
		if k == "NUMASTEAL_SOCKET" {
			return sock
		}
		return ""
	}))
	cs := []lcContender{{lcTrue, []string{truePath}, nil}}
	if cFloor != "" {
		cs = append(cs, lcContender{lcCTrue, []string{cFloor, truePath}, nil})
	}
	if goFloor != "" {
		cs = append(cs, lcContender{lcGoTrue, []string{goFloor, truePath}, nil})
	}
	cs = append(cs,
		lcContender{lcOff, []string{o.Launcher, "true"}, []string{"NUMASTEAL_LAUNCH=off"}},
		lcContender{lcHandoff, []string{o.Launcher, "true"}, nil},
		lcContender{lcMeasured, []string{o.Launcher, "true"}, []string{"NUMASTEAL_MEASURE=1"}},
		lcContender{lcFull, []string{o.Numasteal, "launch", "true"}, nil})
	if ccPath, err := exec.LookPath(cc); err == nil {
		src := filepath.Join(o.Dir, "t.c")
		if err := os.WriteFile(src, []byte("int f(int x) { return x + 1; }\n"), 0o644); err != nil {
			return nil, fmt.Errorf("bench: launch cost: %w", err)
		}
		obj := filepath.Join(o.Dir, "t.o")
		compile := []string{"-c", src, "-o", obj}
		cs = append(cs, lcContender{lcCC, append([]string{ccPath}, compile...), nil})
		if cFloor != "" {
			cs = append(cs, lcContender{lcCCC, append([]string{cFloor, ccPath}, compile...), nil})
		}
		if goFloor != "" {
			cs = append(cs, lcContender{lcCCGo, append([]string{goFloor, ccPath}, compile...), nil})
		}
		// The launcher gets the compiler's name, as a build gives it.
		cs = append(cs, lcContender{lcCCLaunched, append([]string{o.Launcher, cc}, compile...), nil})
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
	res := &LaunchCostResult{Rounds: o.Rounds, Overheads: map[string]float64{}, Missing: missing}
	idx := map[string]int{}
	for i, c := range cs {
		idx[c.name] = i
		res.Rows = append(res.Rows, LaunchCostRow{
			Name: c.name, Command: c.args, WallUS: median(wall[i]),
			P25US: quantile(wall[i], 0.25), P75US: quantile(wall[i], 0.75), CPUUS: median(cpu[i]),
		})
	}
	diffs := func(a, b string) ([]float64, bool) {
		ia, oka := idx[a]
		ib, okb := idx[b]
		if !oka || !okb {
			return nil, false
		}
		d := make([]float64, o.Rounds)
		for r := range d {
			d[r] = wall[ia][r] - wall[ib][r]
		}
		return d, true
	}
	for _, name := range []string{lcCTrue, lcGoTrue, lcOff, lcHandoff, lcMeasured, lcFull} {
		if d, ok := diffs(name, lcTrue); ok {
			res.Overheads[name] = median(d)
		}
	}
	if d, ok := diffs(lcHandoff, lcGoTrue); ok {
		res.OwnTrueUS = [3]float64{median(d), quantile(d, 0.25), quantile(d, 0.75)}
	}
	i, ok := idx[lcCC]
	if !ok {
		return res, nil
	}
	m := median(wall[i])
	res.CompileUS = m
	share := func(name string, d []float64) LaunchCostShare {
		return LaunchCostShare{Name: name, Median: 100 * median(d) / m,
			P25: 100 * quantile(d, 0.25) / m, P75: 100 * quantile(d, 0.75) / m}
	}
	for _, name := range []string{lcCCC, lcCCGo, lcCCLaunched} {
		if d, ok := diffs(name, lcCC); ok {
			res.OverCompile = append(res.OverCompile, share(name, d))
			if name == lcCCLaunched {
				res.Overheads[name] = median(d)
				res.CompilePercent = 100 * median(d) / m
			}
		}
	}
	if d, ok := diffs(lcCCLaunched, lcCCGo); ok {
		own := share("numasteal-launch less the exec-only Go program", d)
		res.OwnPoints = &own
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
