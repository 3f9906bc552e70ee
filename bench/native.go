package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
)

// Native builds: kernbench's rows for what a build engineer runs. The
// recorded corpora (cgen, debian:) hand the same command list to every
// runner; a native corpus is instead built by the project's own build
// system from its unchanged build files, once plainly and once with the
// launcher in front of the compiler (make CC="numasteal-launch gcc",
// CMake's CMAKE_<LANG>_COMPILER_LAUNCHER), which is how numasteal is
// meant to be used on a real tree.
//
// Each run cleans its tree with the build system's own clean (make
// clean, ninja -t clean), untimed, then builds it, timed as kernbench
// times: wall clock from the start to the reap of the build tool, user
// and system time of its process tree from wait4's rusage (the launchers
// and compilers are in it; the daemon, started detached by the first
// launcher, is not, so its own CPU time is added from /proc, see
// native_daemon.go). Contenders alternate run by run (A B C A B C ...)
// and every figure is a median. A pair row starts two builds at once,
// each in its own tree, and times them until the later one ended.

// NativeOptions configures RunNative.
type NativeOptions struct {
	// Spec is the corpus: "linux:tinyconfig" or "debian-cmake:SRCPKG"
	// (ParseNativeSpec).
	Spec string
	// Dir is the work directory: the trees go under it, and a tree
	// unpacked or configured by an earlier benchmark there is reused.
	Dir string
	// Numasteal is the numasteal binary whose daemon ("numasteal serve")
	// the launchers start.
	Numasteal string
	// Launcher is the numasteal-launch binary; "" means numasteal-launch
	// beside Numasteal.
	Launcher string
	// Reps is how many times each contender runs; 0 means 3.
	Reps int
	// CPUs scales make's -j 2×CPUs; 0 means the CPUs this process may use.
	CPUs int
	// Two adds the pair rows: two builds at once, plainly and through one
	// daemon.
	Two bool
	// Log, when not nil, receives one line per preparation step.
	Log func(string)
	// Progress, when not nil, is called before each run; its Runner is the
	// row key (RowMake2x, ...).
	Progress func(KernbenchProgress)
}

// NativeRow is the medians of one contender.
type NativeRow struct {
	// Row is the contender's key: RowMake2x, RowNinjaLauncher, ...
	Row string `json:"row"`
	// Runner is the build tool: make or ninja.
	Runner string `json:"runner"`
	// Jobs is the -j level: 2x, max, default (ninja's own) or a number.
	Jobs string `json:"jobs"`
	// J is the -j value passed: 0 for unlimited (make -j), -1 for none
	// (the tool's default).
	J int `json:"j"`
	// Launcher is true when the compilers ran under the launcher.
	Launcher bool `json:"launcher"`
	// Builds is how many builds ran at once: 1, or 2 for a pair.
	Builds int `json:"builds"`
	// Command is the first build's command line.
	Command string `json:"command"`
	// ElapsedS is the wall time; for a pair, until the later build ended.
	ElapsedS float64 `json:"elapsed_s"`
	// UserS and SysS are the builds' process trees, summed over a pair.
	UserS float64 `json:"user_s"`
	SysS  float64 `json:"sys_s"`
	// DaemonS is the daemon's own user+sys time (launcher rows).
	DaemonS float64 `json:"daemon_cpu_s"`
	// DaemonJobs is how many jobs the daemon admitted (launcher rows).
	DaemonJobs float64 `json:"daemon_jobs"`
	// CPUPct is (user+sys+daemon)/elapsed, in percent.
	CPUPct float64 `json:"cpu_pct"`
	// Runs is how many runs the medians are of.
	Runs int `json:"runs"`
}

// NativeResult is a whole native benchmark.
type NativeResult struct {
	// Corpus is the spelling of the corpus (linux:tinyconfig).
	Corpus string `json:"corpus"`
	// CPUs is what make's -j 2×CPUs was scaled by.
	CPUs int `json:"cpus"`
	// Reps is how many times each contender ran.
	Reps int `json:"reps"`
	// Launcher is the numasteal-launch binary of the launcher rows.
	Launcher string `json:"launcher"`
	// Rows are the contenders in the order they alternated.
	Rows []NativeRow `json:"rows"`
	// Ratios are the launcher rows against the plain ones.
	Ratios []NativeRatio `json:"ratios"`
}

// Row returns the row of key, if it ran.
func (r *NativeResult) Row(key string) (NativeRow, bool) {
	for _, row := range r.Rows {
		if row.Row == key {
			return row, true
		}
	}
	return NativeRow{}, false
}

// nativePlan is a prepared native benchmark: its trees on disk and
// configured, its contenders in the order they alternate.
type nativePlan struct {
	name       string
	contenders []nativeContender
	ratios     []nativeRatioSpec
}

// RunNative prepares the native corpus o.Spec under o.Dir (fetching,
// unpacking and configuring what an earlier benchmark there did not
// leave) and runs every contender o.Reps times, alternating. Each
// launcher run starts a daemon of its own, on a socket of its own; the
// daemons of one RunNative share their learned peak-RSS history, so it
// persists across repetitions, never across benchmarks
// (native_daemon.go). No daemon it started and no build it ran outlives
// it, also when ctx is cancelled.
func RunNative(ctx context.Context, o NativeOptions) (res *NativeResult, err error) {
	spec, err := ParseNativeSpec(o.Spec)
	if err != nil {
		return nil, err
	}
	if o, err = o.resolve(spec); err != nil {
		return nil, err
	}
	if o.Dir == "" {
		return nil, errors.New("bench: a native corpus needs a work directory")
	}
	if o.Dir, err = filepath.Abs(o.Dir); err != nil {
		return nil, fmt.Errorf("bench: work directory: %w", err)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	sess, err := newDaemonSession(o.Dir, o.Numasteal)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := sess.close(); cerr != nil && err == nil {
			res, err = nil, cerr
		}
	}()
	var plan *nativePlan
	switch spec.Kind {
	case NativeLinux:
		plan, err = prepareLinux(ctx, o, sess)
	case NativeDebianCMake:
		plan, err = prepareDebianCMake(ctx, spec.Arg, o, sess)
	}
	if err != nil {
		return nil, err
	}
	return runNativePlan(ctx, plan, o, sess)
}

// Check says what is wrong with o before anything runs: the corpus's
// spelling, the numasteal and launcher binaries, the tools the corpus
// needs in PATH. RunNative makes the same checks first.
func (o NativeOptions) Check() error {
	spec, err := ParseNativeSpec(o.Spec)
	if err != nil {
		return err
	}
	_, err = o.resolve(spec)
	return err
}

// resolve fills o's defaults and checks, before anything runs, that its
// binaries and the tools of spec are there.
func (o NativeOptions) resolve(spec NativeSpec) (NativeOptions, error) {
	if o.Reps <= 0 {
		o.Reps = 3
	}
	if o.CPUs <= 0 {
		o.CPUs = goruntime.NumCPU()
	}
	if o.Log == nil {
		o.Log = func(string) {}
	}
	var err error
	if o.Numasteal, err = checkExecutable("the numasteal binary", o.Numasteal); err != nil {
		return o, err
	}
	if o.Launcher == "" {
		o.Launcher = filepath.Join(filepath.Dir(o.Numasteal), "numasteal-launch")
		if _, err := checkExecutable("the launcher", o.Launcher); err != nil {
			return o, fmt.Errorf("%w (the launcher is numasteal-launch beside %s unless named: build both there with go build -o DIR/ ./cmd/numasteal ./cmd/numasteal-launch)", err, o.Numasteal)
		}
	}
	if o.Launcher, err = checkExecutable("the launcher", o.Launcher); err != nil {
		return o, err
	}
	if strings.ContainsAny(o.Launcher, " \t\n'\"\\$") {
		// make splits CC="LAUNCHER gcc" at blanks and the kernel's
		// Makefiles pass it through the shell.
		return o, fmt.Errorf("bench: the launcher's path %q has blanks or shell characters, which CC=\"LAUNCHER gcc\" cannot carry", o.Launcher)
	}
	tools := map[string][]string{
		NativeLinux:       {"make", "gcc", "tar", "xz", "flex", "bison", "bc"},
		NativeDebianCMake: {"cmake", "ninja", "gcc", "apt-get", "dpkg-source"},
	}[spec.Kind]
	var missing []string
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return o, fmt.Errorf("bench: corpus %s needs %s, not found in PATH", spec, strings.Join(missing, ", "))
	}
	return o, nil
}

// checkExecutable returns the absolute path of the executable file path,
// or an error naming what it is.
func checkExecutable(what, path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("bench: %s is not named", what)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("bench: %s: %w", what, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("bench: %s: %w", what, err)
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("bench: %s %s is not an executable file", what, abs)
	}
	return abs, nil
}
