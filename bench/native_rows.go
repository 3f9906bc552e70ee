package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
)

// Native row keys, as in NativeRow.Row.
const (
	RowMake2x           = "make-2x"                  // make -j 2×CPUs
	RowMakeMax          = "make-max"                 // make -j
	RowMakeMaxLauncher  = "make-max-launcher"        // numasteal exec make -j CC="LAUNCHER gcc" HOSTCC="LAUNCHER gcc"
	RowPairMake2x       = "pair-make-2x"             // two make -j 2×CPUs at once
	RowPairMakeLauncher = "pair-make-max-launcher"   // two numasteal exec make -j with the launcher at once, one daemon
	RowNinja            = "ninja"                    // ninja at its default -j
	RowNinjaLauncher    = "ninja-1000-launcher"      // ninja -j 1000 in the tree configured with the launcher
	RowPairNinja        = "pair-ninja"               // two ninja at once
	RowPairNinjaLaunch  = "pair-ninja-1000-launcher" // two ninja -j 1000 with the launcher at once, one daemon
)

// ninjaLauncherJobs is the -j of ninja with the launcher: more than any
// build here has jobs at once, so the daemon alone decides what runs.
const ninjaLauncherJobs = 1000

// nativeContender is one row: a build by the project's own build system,
// or two started at once.
type nativeContender struct {
	key, runner, jobs string
	j                 int  // the -j passed; 0 unlimited, -1 none
	launcher          bool // the builds' compilers run under the launcher, through one daemon
	builds            []nativeBuild
}

// nativeBuild is one build of a contender in its own tree.
type nativeBuild struct {
	clean nativeCmd // run before the build, untimed, without the launcher
	build nativeCmd // timed
	// verify, when not nil, checks after the build that it built.
	verify func(ctx context.Context) error
}

// nativeRatioSpec is a ratio of two rows' medians the table prints.
type nativeRatioSpec struct {
	name     string
	num, den string  // row keys
	cpu      bool    // user+sys (with the daemon's) instead of elapsed
	limit    float64 // the target: ratio ≤ limit; 0 when there is none
}

// makeTree is one tree make builds: the directory make runs in (-C),
// the variables that choose where its outputs go (the kernel's O=DIR),
// and the files a build must leave.
type makeTree struct {
	dir      string
	vars     []string
	products []string // absolute
}

// makeSetup is what makeContenders builds rows from.
type makeSetup struct {
	// plain is the tree of the rows without the launcher, launch the tree
	// of the rows with it: a tree is always built by the same compiler
	// command, so a clean never leaves outputs (the kernel's host
	// programs) that the other command line would rebuild.
	plain, launch makeTree
	// plainB and launchB, when both set, are the second trees of the pair
	// rows.
	plainB, launchB *makeTree
	launcher        string // the numasteal-launch binary
	// numasteal, when set, is the numasteal binary the launcher rows'
	// make runs under: "numasteal exec make", the README's way (make
	// forks only what the daemon's jobserver lets run).
	numasteal string
	cpus      int
}

// launcherMakeVars are the make variables that put the launcher in front
// of the compilers: CC for the target, HOSTCC for the kernel's host
// programs (unused by a Makefile without it).
func launcherMakeVars(launcher string) []string {
	return []string{"CC=" + launcher + " gcc", "HOSTCC=" + launcher + " gcc"}
}

// makeBuild returns the build of t at -j j (0: unlimited), with the
// launcher's variables when launcher is set, under "numasteal exec"
// when numasteal is set too.
func makeBuild(t makeTree, j int, launcher, numasteal string) nativeBuild {
	vars := t.vars
	var args []string
	if launcher != "" {
		vars = append(vars[:len(vars):len(vars)], launcherMakeVars(launcher)...)
		if numasteal != "" {
			args = []string{numasteal, "exec"}
		}
	}
	args = append(append(args, "make", "-C", t.dir), vars...)
	args = append(args, "-j")
	if j > 0 {
		args = append(args, strconv.Itoa(j))
	}
	return nativeBuild{
		clean:  nativeCmd{Args: append(append([]string{"make", "-C", t.dir}, t.vars...), "clean")},
		build:  nativeCmd{Args: args},
		verify: productsVerifier(t.products),
	}
}

// productsVerifier returns a check that every file of products exists.
func productsVerifier(products []string) func(context.Context) error {
	return func(context.Context) error {
		for _, p := range products {
			if _, err := os.Stat(p); err != nil {
				return fmt.Errorf("the build did not make %s: %w", p, err)
			}
		}
		return nil
	}
}

// makeContenders returns the make rows of s and their ratios: make at
// 2×CPUs and unlimited, and unlimited with the launcher; with the second
// trees, the two pairs.
func makeContenders(s makeSetup) ([]nativeContender, []nativeRatioSpec) {
	j2 := 2 * s.cpus
	cs := []nativeContender{
		{key: RowMake2x, runner: RunnerMake, jobs: "2x", j: j2, builds: []nativeBuild{makeBuild(s.plain, j2, "", "")}},
		{key: RowMakeMax, runner: RunnerMake, jobs: "max", j: 0, builds: []nativeBuild{makeBuild(s.plain, 0, "", "")}},
		{key: RowMakeMaxLauncher, runner: RunnerMake, jobs: "max", j: 0, launcher: true, builds: []nativeBuild{makeBuild(s.launch, 0, s.launcher, s.numasteal)}},
	}
	rs := []nativeRatioSpec{
		{name: "launcher max / make 2x (elapsed)", num: RowMakeMaxLauncher, den: RowMake2x, limit: 1.03},
		{name: "launcher max / make max (elapsed)", num: RowMakeMaxLauncher, den: RowMakeMax},
		{name: "launcher max / make 2x (user+sys)", num: RowMakeMaxLauncher, den: RowMake2x, cpu: true},
	}
	if s.plainB != nil && s.launchB != nil {
		cs = append(cs,
			nativeContender{key: RowPairMake2x, runner: RunnerMake, jobs: "2x", j: j2,
				builds: []nativeBuild{makeBuild(s.plain, j2, "", ""), makeBuild(*s.plainB, j2, "", "")}},
			nativeContender{key: RowPairMakeLauncher, runner: RunnerMake, jobs: "max", j: 0, launcher: true,
				builds: []nativeBuild{makeBuild(s.launch, 0, s.launcher, s.numasteal), makeBuild(*s.launchB, 0, s.launcher, s.numasteal)}},
		)
		rs = append(rs, nativeRatioSpec{name: "two builds: launcher max / make 2x (elapsed, later end)", num: RowPairMakeLauncher, den: RowPairMake2x, limit: 0.95})
	}
	return cs, rs
}

// ninjaSetup is what ninjaContenders builds rows from: build directories
// CMake configured for Ninja, plain without the launcher and launch with
// it as CMAKE_<LANG>_COMPILER_LAUNCHER; plainB and launchB, when both
// set, are the second directories of the pair rows.
type ninjaSetup struct {
	plain, launch   string
	plainB, launchB string
}

// ninjaBuild returns the build of dir at -j j (-1: ninja's default).
// It has no check beyond ninja's status: after ninja -t clean a
// successful ninja built every output, and CMake projects have targets
// that are never up to date (zstd's symlinks), so ninja -n cannot tell.
func ninjaBuild(dir string, j int) nativeBuild {
	args := []string{"ninja", "-C", dir}
	if j >= 0 {
		args = append(args, "-j", strconv.Itoa(j))
	}
	return nativeBuild{
		clean: nativeCmd{Args: []string{"ninja", "-C", dir, "-t", "clean"}},
		build: nativeCmd{Args: args},
	}
}

// ninjaContenders returns the ninja rows of s and their ratios: ninja at
// its default -j, and at -j 1000 with the launcher; with the second
// directories, the two pairs.
func ninjaContenders(s ninjaSetup) ([]nativeContender, []nativeRatioSpec) {
	cs := []nativeContender{
		{key: RowNinja, runner: RunnerNinja, jobs: "default", j: -1, builds: []nativeBuild{ninjaBuild(s.plain, -1)}},
		{key: RowNinjaLauncher, runner: RunnerNinja, jobs: strconv.Itoa(ninjaLauncherJobs), j: ninjaLauncherJobs, launcher: true,
			builds: []nativeBuild{ninjaBuild(s.launch, ninjaLauncherJobs)}},
	}
	rs := []nativeRatioSpec{
		{name: "launcher -j 1000 / ninja (elapsed)", num: RowNinjaLauncher, den: RowNinja, limit: 1.03},
		{name: "launcher -j 1000 / ninja (user+sys)", num: RowNinjaLauncher, den: RowNinja, cpu: true},
	}
	if s.plainB != "" && s.launchB != "" {
		cs = append(cs,
			nativeContender{key: RowPairNinja, runner: RunnerNinja, jobs: "default", j: -1,
				builds: []nativeBuild{ninjaBuild(s.plain, -1), ninjaBuild(s.plainB, -1)}},
			nativeContender{key: RowPairNinjaLaunch, runner: RunnerNinja, jobs: strconv.Itoa(ninjaLauncherJobs), j: ninjaLauncherJobs, launcher: true,
				builds: []nativeBuild{ninjaBuild(s.launch, ninjaLauncherJobs), ninjaBuild(s.launchB, ninjaLauncherJobs)}},
		)
		rs = append(rs, nativeRatioSpec{name: "two builds: launcher -j 1000 / ninja (elapsed, later end)", num: RowPairNinjaLaunch, den: RowPairNinja, limit: 0.95})
	}
	return cs, rs
}

// NativeRatio is one ratio of two rows' medians.
type NativeRatio struct {
	Name  string  `json:"name"`
	Ratio float64 `json:"ratio"`
	// Limit is the target, Ratio ≤ Limit; 0 for a ratio reported without
	// one.
	Limit float64 `json:"limit,omitempty"`
	// Verdict is "met" or "missed"; "" without a target.
	Verdict string `json:"verdict,omitempty"`
}

// nativeRatios computes specs over rows; a ratio whose rows did not run,
// or whose denominator is 0, is left out.
func nativeRatios(specs []nativeRatioSpec, rows []NativeRow) []NativeRatio {
	byKey := make(map[string]NativeRow, len(rows))
	for _, r := range rows {
		byKey[r.Row] = r
	}
	value := func(r NativeRow, cpu bool) float64 {
		if cpu {
			return r.UserS + r.SysS + r.DaemonS
		}
		return r.ElapsedS
	}
	var out []NativeRatio
	for _, s := range specs {
		num, ok1 := byKey[s.num]
		den, ok2 := byKey[s.den]
		if !ok1 || !ok2 || value(den, s.cpu) <= 0 {
			continue
		}
		r := NativeRatio{Name: s.name, Ratio: value(num, s.cpu) / value(den, s.cpu), Limit: s.limit}
		if s.limit > 0 {
			r.Verdict = "missed"
			if r.Ratio <= s.limit {
				r.Verdict = "met"
			}
		}
		out = append(out, r)
	}
	return out
}
