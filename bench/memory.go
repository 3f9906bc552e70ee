package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/numasteal/numasteal/internal/membuild"
	"github.com/numasteal/numasteal/launch"
)

// Memory-limited builds: a make project whose compiles each need more
// than half of the memory its cgroup allows, built in that cgroup by
// plain make at fixed -j and by make -j with numasteal-launch in front
// of the compiler (the README's way), whose daemon admits compiles by
// memory. The compiler is memhog (internal/membuild): it really
// allocates what its source says, and the kernel OOM-kills it as it
// would cc1.
//
// Every run cleans the project (make clean, untimed) and builds it with
// make -k, so that a compile the kernel kills does not stop the others:
// a run reports the objects built, the OOM kills the cgroup counted
// during it (memory.oom_control or memory.events; for numasteal run, its
// summary's count, which includes its tasks' cgroup) and make's failed
// jobs (its "*** [target]" lines). A run completed when make exited 0
// with every object built. The launcher runs in pairs, with a daemon of
// their own: the first with an empty peak-RSS history, the second with
// what the first learned (a new daemon reading the history the first
// one saved as it was stopped). Contenders alternate run by run
// (A B C ... A B C ...) and wall times are medians with their range.

// ErrNoMemoryCgroup is wrapped by RunMemory's error when no
// memory-limited cgroup can be made on this machine.
var ErrNoMemoryCgroup = errors.New("no memory cgroup can be made here")

// MemoryOptions configures RunMemory.
type MemoryOptions struct {
	// LimitMiB is the cgroup's memory limit; 0 means 400.
	LimitMiB int
	// Compiles is the number of compiles of the project; 0 means 12.
	Compiles int
	// CompileMiB is what each compile allocates; 0 means 250.
	CompileMiB int
	// CompileMS is how long each compile takes; 0 means 800.
	CompileMS int
	// Jobs are the -j of the plain make rows; nil means 1, 2, 4.
	Jobs []int
	// Reps is how many times each contender runs; 0 means 3.
	Reps int
	// Numasteal is the numasteal binary whose daemon ("numasteal serve")
	// the launchers start.
	Numasteal string
	// Launcher is the numasteal-launch binary; "" means numasteal-launch
	// beside Numasteal, else one built with the go command.
	Launcher string
	// Memhog is the memhog compiler; "" means memhog beside Numasteal,
	// else one built with the go command (from the numasteal source tree).
	Memhog string
	// Dir is the work directory: the project, the daemon's sockets and
	// the binaries built go in a directory made under it (os.TempDir
	// when ""), removed at the end.
	Dir string
	// Progress, when not nil, is called before each run.
	Progress func(MemoryProgress)
}

// MemoryProgress says which run is about to start.
type MemoryProgress struct {
	Rep, Reps int
	Row       string
}

// MemoryRun is one build.
type MemoryRun struct {
	// Completed: make exited 0 and every object was built.
	Completed bool `json:"completed"`
	// Built is the objects that exist after the run.
	Built int `json:"built"`
	// OOMKills is the OOM kills the cgroup counted during the run.
	OOMKills int64 `json:"oom_kills"`
	// Failed is make's failed jobs.
	Failed int `json:"failed_jobs"`
	// WallS is the build's wall time in seconds.
	WallS float64 `json:"wall_s"`
	// TimedOut: the run was stopped at its deadline.
	TimedOut bool `json:"timed_out,omitempty"`
	// DaemonJobs is the jobs the launcher rows' daemon admitted.
	DaemonJobs int64 `json:"daemon_jobs,omitempty"`
}

// MemoryRow is one contender and its runs.
type MemoryRow struct {
	Name    string   `json:"name"`
	Command []string `json:"command"`
	// Launcher is true for the numasteal-launch rows, Run for the
	// numasteal run rows.
	Launcher bool        `json:"launcher"`
	Run      bool        `json:"run"`
	Runs     []MemoryRun `json:"runs"`
	// Completed is how many runs completed.
	Completed int `json:"completed"`
	// WallS is the median wall time of the runs, MinS and MaxS its range.
	WallS float64 `json:"wall_s"`
	MinS  float64 `json:"min_s"`
	MaxS  float64 `json:"max_s"`
	// Ratio is WallS over the best fixed -j's WallS; 0 when no fixed -j
	// completed every run, or this row did not.
	Ratio float64 `json:"ratio"`
}

// MemoryResult is the table of RunMemory.
type MemoryResult struct {
	LimitMiB int `json:"limit_mib"`
	// Cgroup is the group's directory (removed at the end); CgroupV2
	// says in which hierarchy it was.
	Cgroup     string `json:"cgroup"`
	CgroupV2   bool   `json:"cgroup_v2"`
	Compiles   int    `json:"compiles"`
	CompileMiB int    `json:"compile_mib"`
	CompileMS  int    `json:"compile_ms"`
	Reps       int    `json:"reps"`
	// Launcher is the numasteal-launch binary, "" when RunMemory built
	// one (from the source tree, with the go command).
	Launcher string `json:"launcher"`
	// LoadStart and LoadEnd are /proc/loadavg's 1, 5 and 15 minute load
	// averages before the first run and after the last.
	LoadStart [3]float64  `json:"load_start"`
	LoadEnd   [3]float64  `json:"load_end"`
	Rows      []MemoryRow `json:"rows"`
	// BestFixed is the name of the fastest plain make row that completed
	// every run; "" when none did.
	BestFixed string `json:"best_fixed"`
	// GoalMet: every run through numasteal (the launcher's rows and
	// numasteal run's) completed with no failed job, within GoalRatio of
	// BestFixed.
	GoalMet bool `json:"goal_met"`
}

// GoalRatio is the most a numasteal row's wall may be over the best fixed
// -j that completes.
const GoalRatio = 1.25

// memoryContender is one row's build: its command, and for the launcher
// and numasteal run rows whether it is the first run of a pair (a new
// daemon directory, or no history file).
type memoryContender struct {
	name     string
	args     []string
	launcher bool
	run      bool
	first    bool
}

// memoryDefaults fills o's zero fields and checks it.
func memoryDefaults(o MemoryOptions) (MemoryOptions, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.LimitMiB, 400)
	def(&o.Compiles, 12)
	def(&o.CompileMiB, 250)
	def(&o.CompileMS, 800)
	def(&o.Reps, 3)
	if o.Jobs == nil {
		o.Jobs = []int{1, 2, 4}
	}
	switch {
	case o.LimitMiB < 16:
		return o, fmt.Errorf("bench: memory: a limit of %d MiB: want at least 16 (make and the shell need some)", o.LimitMiB)
	case o.Compiles < 1:
		return o, fmt.Errorf("bench: memory: %d compiles: want at least 1", o.Compiles)
	case o.CompileMiB < 1:
		return o, fmt.Errorf("bench: memory: compiles of %d MiB: want at least 1", o.CompileMiB)
	case o.CompileMS < 0:
		return o, fmt.Errorf("bench: memory: compiles of %d ms: want 0 or more", o.CompileMS)
	case o.Reps < 1:
		return o, fmt.Errorf("bench: memory: %d repetitions: want at least 1", o.Reps)
	}
	for _, j := range o.Jobs {
		if j < 1 {
			return o, fmt.Errorf("bench: memory: -j %d: want at least 1", j)
		}
	}
	return o, nil
}

// CheckMemory says what is wrong with o before anything runs: its
// numbers, the numasteal binary, a launcher or memhog it names, make.
func CheckMemory(o MemoryOptions) error {
	o, err := memoryDefaults(o)
	if err != nil {
		return err
	}
	if _, err := checkExecutable("the numasteal binary", o.Numasteal); err != nil {
		return err
	}
	for what, p := range map[string]string{"the launcher": o.Launcher, "memhog": o.Memhog} {
		if p == "" {
			continue
		}
		if _, err := checkExecutable(what, p); err != nil {
			return err
		}
	}
	if _, err := exec.LookPath("make"); err != nil {
		return fmt.Errorf("bench: memory: %w", err)
	}
	return nil
}

// RunMemory builds the project of o in a memory-limited cgroup it makes
// (and removes at the end) with every contender, o.Reps times each,
// alternated. Where no memory cgroup can be made its error wraps
// ErrNoMemoryCgroup.
func RunMemory(ctx context.Context, o MemoryOptions) (res *MemoryResult, err error) {
	if err := CheckMemory(o); err != nil {
		return nil, err
	}
	o, _ = memoryDefaults(o)
	if o.Numasteal, err = checkExecutable("the numasteal binary", o.Numasteal); err != nil {
		return nil, err
	}
	// The group first: where none can be made, nothing else is done.
	g, err := membuild.NewGroup(int64(o.LimitMiB)<<20, fmt.Sprintf("numasteal-bench-memory-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err != nil {
		return nil, fmt.Errorf("bench: memory: %w: %w", ErrNoMemoryCgroup, err)
	}
	defer func() {
		if rerr := g.Remove(); rerr != nil && err == nil {
			res, err = nil, rerr
		}
	}()
	work, err := os.MkdirTemp(o.Dir, "nsm-") // short: the daemon's sockets go below it
	if err != nil {
		return nil, fmt.Errorf("bench: memory: %w", err)
	}
	defer func() {
		if rerr := os.RemoveAll(work); rerr != nil && err == nil {
			res, err = nil, fmt.Errorf("bench: memory: %w", rerr)
		}
	}()
	launcher, err := findOrBuild(o.Launcher, "numasteal-launch", "github.com/numasteal/numasteal/cmd/numasteal-launch", o.Numasteal, work)
	if err != nil {
		return nil, err
	}
	if strings.ContainsAny(launcher, " \t\n'\"\\$") {
		return nil, fmt.Errorf("bench: memory: the launcher's path %q has blanks or shell characters, which CC=\"LAUNCHER cc\" cannot carry", launcher)
	}
	memhog, err := findOrBuild(o.Memhog, "memhog", membuild.MemhogPackage, o.Numasteal, work)
	if err != nil {
		return nil, err
	}
	cc, err := membuild.CCLink(memhog, work)
	if err != nil {
		return nil, err
	}
	src := filepath.Join(work, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		return nil, fmt.Errorf("bench: memory: %w", err)
	}
	mib := make([]int, o.Compiles)
	for i := range mib {
		mib[i] = o.CompileMiB
	}
	objs, err := membuild.WriteProject(src, mib, o.CompileMS)
	if err != nil {
		return nil, err
	}

	var cs []memoryContender
	for _, j := range o.Jobs {
		cs = append(cs, memoryContender{name: fmt.Sprintf("make -j%d", j), args: []string{"make", "-k", fmt.Sprintf("-j%d", j), "CC=" + cc}})
	}
	lcc := "CC=" + launcher + " " + cc
	cs = append(cs,
		memoryContender{name: `make -j CC="numasteal-launch cc", first run`, args: []string{"make", "-k", "-j", lcc}, launcher: true, first: true},
		memoryContender{name: `make -j CC="numasteal-launch cc", second run`, args: []string{"make", "-k", "-j", lcc}, launcher: true})
	// The same compiles as numasteal run's commands, at the largest -j
	// of the plain rows; its history (peaks) beside the project.
	var cmds strings.Builder
	for _, obj := range objs {
		fmt.Fprintf(&cmds, "%s -c %s -o %s\n", cc, strings.TrimSuffix(obj, ".o")+".c", obj)
	}
	if err := os.WriteFile(filepath.Join(src, "commands.txt"), []byte(cmds.String()), 0o644); err != nil {
		return nil, fmt.Errorf("bench: memory: %w", err)
	}
	runJ := strconv.Itoa(slices.Max(o.Jobs))
	runArgs := []string{o.Numasteal, "run", "-k", "-q", "--progress", "none", "-j", runJ, "--history", filepath.Join(work, "run-history"), "commands.txt"}
	cs = append(cs,
		memoryContender{name: "numasteal run -j " + runJ + ", first run", args: runArgs, run: true, first: true},
		memoryContender{name: "numasteal run -j " + runJ + ", second run", args: runArgs, run: true})
	res = &MemoryResult{
		LimitMiB: o.LimitMiB, Cgroup: g.Dir, CgroupV2: g.V2, Compiles: o.Compiles, CompileMiB: o.CompileMiB,
		CompileMS: o.CompileMS, Reps: o.Reps, LoadStart: loadAvg(),
	}
	if !strings.HasPrefix(launcher, work+string(filepath.Separator)) {
		res.Launcher = launcher
	}
	for _, c := range cs {
		res.Rows = append(res.Rows, MemoryRow{Name: c.name, Command: c.args, Launcher: c.launcher, Run: c.run})
	}
	b := memoryBuild{g: g, src: src, objs: objs, deadline: 2*time.Minute + time.Duration(20*o.Compiles*o.CompileMS)*time.Millisecond}
	var sess *daemonSession
	defer func() {
		if sess != nil {
			if cerr := sess.close(); cerr != nil && err == nil {
				res, err = nil, cerr
			}
		}
	}()
	for rep := 1; rep <= o.Reps; rep++ {
		for i, c := range cs {
			if o.Progress != nil {
				o.Progress(MemoryProgress{Rep: rep, Reps: o.Reps, Row: c.name})
			}
			if c.launcher && c.first {
				if sess != nil {
					if err := sess.close(); err != nil {
						return nil, err
					}
				}
				if sess, err = newDaemonSession(work, o.Numasteal); err != nil {
					return nil, err
				}
			}
			r, err := b.run(ctx, c, sess)
			if err != nil {
				return nil, err
			}
			res.Rows[i].Runs = append(res.Rows[i].Runs, r)
		}
	}
	res.LoadEnd = loadAvg()
	summarizeMemory(res)
	return res, nil
}

// summarizeMemory fills the rows' medians and ratios, BestFixed and
// GoalMet from the runs.
func summarizeMemory(res *MemoryResult) {
	for i := range res.Rows {
		row := &res.Rows[i]
		var walls []float64
		for _, r := range row.Runs {
			walls = append(walls, r.WallS)
			if r.Completed {
				row.Completed++
			}
		}
		row.WallS, row.MinS, row.MaxS = median(walls), slices.Min(walls), slices.Max(walls)
	}
	var best *MemoryRow
	for i, row := range res.Rows {
		if !row.Launcher && !row.Run && row.Completed == len(row.Runs) && (best == nil || row.WallS < best.WallS) {
			best = &res.Rows[i]
		}
	}
	if best == nil {
		return
	}
	res.BestFixed = best.Name
	res.GoalMet = true
	for i := range res.Rows {
		row := &res.Rows[i]
		if row.Completed == len(row.Runs) && best.WallS > 0 {
			row.Ratio = row.WallS / best.WallS
		}
		if !row.Launcher && !row.Run {
			continue
		}
		for _, r := range row.Runs {
			if !r.Completed || r.Failed > 0 {
				res.GoalMet = false
			}
		}
		if row.Ratio == 0 || row.Ratio > GoalRatio {
			res.GoalMet = false
		}
	}
}

// memoryBuild is the project and its cgroup.
type memoryBuild struct {
	g        *membuild.Group
	src      string
	objs     []string
	deadline time.Duration // of one run
}

// failedJob matches make's line for a failed recipe: "make: ***
// [Makefile:3: f001.o] Killed", "make[1]: *** [f001.o] Error 1".
var failedJob = regexp.MustCompile(`(?m)^\S*make(\[\d+\])?: \*\*\* \[[^\]]*\] `)

// runOOMKills matches the OOM kills in numasteal run's memory line:
// "memory: limit 353M (...), 20M available at the end, 1 OOM kills, ...".
var runOOMKills = regexp.MustCompile(`(?m)^memory: .*?(\d+) OOM kills,`)

// run cleans the project and builds it once with c, in the group; the
// launcher rows with a new socket of sess, whose daemon it stops at the
// end. Whatever is left in the group afterwards is killed.
func (b memoryBuild) run(ctx context.Context, c memoryContender, sess *daemonSession) (MemoryRun, error) {
	env := append(os.Environ(), "MAKEFLAGS=", "MFLAGS=", "MAKELEVEL=", "NUMASTEAL_SLOT=", "NUMASTEAL_BUILD=")
	clean := exec.CommandContext(ctx, "make", "clean")
	clean.Dir, clean.Env = b.src, env
	if out, err := clean.CombinedOutput(); err != nil {
		return MemoryRun{}, fmt.Errorf("bench: memory: make clean: %w\n%s", err, tail(out, 2000))
	}
	if c.run && c.first {
		os.Remove(c.args[len(c.args)-2]) // the history: a first run
	}
	var p launch.Paths
	if c.launcher {
		p = sess.next()
		env = append(env, sess.env(p)...)
	}
	rctx, cancel := context.WithTimeout(ctx, b.deadline)
	defer cancel()
	cmd := b.g.Command(exec.CommandContext(rctx, c.args[0], c.args[1:]...))
	cmd.Dir, cmd.Env, cmd.WaitDelay = b.src, env, 5*time.Second
	kills := b.g.OOMKills()
	start := time.Now()
	out, err := cmd.CombinedOutput()
	r := MemoryRun{WallS: time.Since(start).Seconds(), TimedOut: rctx.Err() != nil && ctx.Err() == nil}
	var use daemonUse
	var serr error
	if c.launcher {
		use, serr = stopDaemon(p)
	}
	kerr := b.g.Kill()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return r, context.Cause(ctx)
	case serr != nil:
		return r, serr
	case kerr != nil:
		return r, kerr
	case err != nil && !errors.As(err, &exit):
		return r, fmt.Errorf("bench: memory: %s: %w", c.name, err)
	case c.launcher && (!use.ran || use.jobs == 0):
		return r, fmt.Errorf("bench: memory: %s: the launchers ran no job through a daemon on %s (they run their commands alone when none answers); the daemon's log:\n%s\nmake's output:\n%s",
			c.name, p.Socket, daemonLogTail(p), tail(out, 2000))
	}
	r.OOMKills = b.g.OOMKills() - kills
	if m := runOOMKills.FindSubmatch(out); c.run && m != nil {
		// numasteal run's tasks run in a cgroup of their own below the
		// group, removed when it ends; v1 counts their kills there
		// alone. Its summary counts the kills in its cgroups, the
		// group's included.
		n, _ := strconv.ParseInt(string(m[1]), 10, 64)
		r.OOMKills = max(r.OOMKills, n)
	}
	r.Failed = len(failedJob.FindAll(out, -1))
	r.DaemonJobs = use.jobs
	for _, o := range b.objs {
		if b.built(o) {
			r.Built++
		}
	}
	if c.run && err != nil {
		r.Failed = len(b.objs) - r.Built // numasteal run -k: the tasks that failed
	}
	r.Completed = err == nil && r.Built == len(b.objs)
	return r, nil
}

// built reports whether obj is there and whole: memhog writes a copy of
// its source.
func (b memoryBuild) built(obj string) bool {
	got, err := os.ReadFile(filepath.Join(b.src, obj))
	if err != nil {
		return false
	}
	want, err := os.ReadFile(filepath.Join(b.src, strings.TrimSuffix(obj, ".o")+".c"))
	return err == nil && bytes.Equal(got, want)
}

// findOrBuild returns named when it is given, else the program name
// beside numasteal, else one built from pkg with the go command into
// dir.
func findOrBuild(named, name, pkg, numasteal, dir string) (string, error) {
	if named != "" {
		return checkExecutable(name, named)
	}
	if p, err := checkExecutable(name, filepath.Join(filepath.Dir(numasteal), name)); err == nil {
		return p, nil
	}
	out := filepath.Join(dir, name)
	c := exec.Command("go", "build", "-o", out, pkg)
	if b, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("bench: memory: no %s beside %s, and building it failed (run from the numasteal source tree, or build it there: go build -o %s/ %s): %w\n%s",
			name, numasteal, filepath.Dir(numasteal), pkg, err, tail(b, 2000))
	}
	return out, nil
}

// loadAvg returns /proc/loadavg's three load averages; zeros where it
// cannot be read.
func loadAvg() [3]float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	for i, f := range strings.Fields(string(b)) {
		if i == len(l) {
			break
		}
		l[i], _ = strconv.ParseFloat(f, 64)
	}
	return l
}
