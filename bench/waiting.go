package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// WaitingOptions configure RunWaiting: a project of Compiles ready
// compiles built through the launcher by make -j (every compile forked
// at once, each launcher waiting for a grant), by numasteal exec make -j
// (the README's way: make forks what the daemon's jobserver lets run) and
// by ninja -j NinjaJobs (which nothing throttles), alternated Reps times.
type WaitingOptions struct {
	Compiles  int
	NinjaJobs int
	Reps      int
	// Numasteal and Launcher are the binaries; Dir holds the project and
	// the daemons' sockets ("": a temporary directory, removed after).
	Numasteal, Launcher string
	Dir                 string
	// Interval is how often numasteal's processes are sampled; 0: 50 ms.
	Interval time.Duration
	// Progress, when set, is told each run as it starts.
	Progress func(rep int, row string)
}

// Waiting rows, as in WaitingRow.Row.
const (
	WaitingMake  = "make -j"
	WaitingExec  = "numasteal exec make -j"
	WaitingNinja = "ninja -j N"
)

// WaitingRun is one build: its wall time, the objects it left, and the
// most that numasteal's processes (the daemon and the launchers
// together) held at one sample: proportional set size (PSS, shared pages
// divided among their sharers) and launchers alive; PerLauncher is the
// launchers' PSS over their count at the sample with the most launchers.
type WaitingRun struct {
	WallS        float64 `json:"wall_s"`
	Built        int     `json:"built"`
	PeakPSSMB    float64 `json:"peak_pss_mb"`
	PeakLaunch   int     `json:"peak_launchers"`
	PerLaunchKB  float64 `json:"pss_per_launcher_kb"`
	ThreadsEach  float64 `json:"threads_per_launcher"`
	DaemonJobs   int64   `json:"daemon_jobs"`
	DaemonPSSMB  float64 `json:"daemon_pss_mb"`
	SamplesTaken int     `json:"samples"`
}

// WaitingRow is one way of starting the build: its runs and their
// medians.
type WaitingRow struct {
	Row  string       `json:"row"`
	Args []string     `json:"args"`
	Runs []WaitingRun `json:"runs"`
	// Median is the median of each field over the runs.
	Median WaitingRun `json:"median"`
}

// WaitingResult is RunWaiting's answer.
type WaitingResult struct {
	Compiles int          `json:"compiles"`
	Rows     []WaitingRow `json:"rows"`
	Load     [3]float64   `json:"load_before"`
}

// RunWaiting builds the project each way, Reps rounds alternated, and
// samples numasteal's processes while each build runs.
func RunWaiting(ctx context.Context, o WaitingOptions) (*WaitingResult, error) {
	if o.Compiles < 1 || o.Reps < 1 || o.NinjaJobs < 1 {
		return nil, errors.New("bench: waiting: want at least one compile, one rep and ninja -j 1")
	}
	if o.Interval <= 0 {
		o.Interval = 50 * time.Millisecond
	}
	var err error
	if o.Numasteal, err = checkExecutable("the numasteal binary", o.Numasteal); err != nil {
		return nil, err
	}
	if o.Launcher, err = checkExecutable("numasteal-launch", o.Launcher); err != nil {
		return nil, err
	}
	for _, tool := range []string{"make", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("bench: waiting: %s is not installed (apt-get install %s)", tool, tool)
		}
	}
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "numasteal-waiting-"); err != nil {
			return nil, fmt.Errorf("bench: waiting: %w", err)
		}
		defer os.RemoveAll(dir)
	}
	src := filepath.Join(dir, "src")
	if err := writeWaitingProject(src, o.Compiles, o.Launcher); err != nil {
		return nil, err
	}
	sess, err := newDaemonSession(dir, o.Numasteal)
	if err != nil {
		return nil, err
	}
	defer sess.close()
	cc := "CC=" + o.Launcher + " gcc"
	rows := []WaitingRow{
		{Row: WaitingMake, Args: []string{"make", "-j", cc}},
		{Row: WaitingExec, Args: []string{o.Numasteal, "exec", "make", "-j", cc}},
	}
	if _, err := exec.LookPath("ninja"); err == nil {
		rows = append(rows, WaitingRow{Row: strings.Replace(WaitingNinja, "N", strconv.Itoa(o.NinjaJobs), 1),
			Args: []string{"ninja", "-j", strconv.Itoa(o.NinjaJobs)}})
	}
	res := &WaitingResult{Compiles: o.Compiles, Load: loadAvg()}
	exes := map[string]bool{o.Numasteal: true, o.Launcher: true}
	for rep := 1; rep <= o.Reps; rep++ {
		for i := range rows {
			if o.Progress != nil {
				o.Progress(rep, rows[i].Row)
			}
			r, err := runWaiting(ctx, src, rows[i].Args, sess, exes, o)
			if err != nil {
				return nil, fmt.Errorf("bench: waiting: %s: %w", rows[i].Row, err)
			}
			rows[i].Runs = append(rows[i].Runs, r)
		}
	}
	for i := range rows {
		rows[i].Median = medianWaiting(rows[i].Runs)
	}
	res.Rows = rows
	return res, nil
}

// writeWaitingProject writes n small C sources, a Makefile that compiles
// each (no link: every compile is ready at once) and a build.ninja whose
// rule runs the compiler through launcher, as CMake's
// CMAKE_C_COMPILER_LAUNCHER does.
func writeWaitingProject(dir string, n int, launcher string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: waiting: %w", err)
	}
	var objs []string
	var nj strings.Builder
	nj.WriteString("rule cc\n  command = " + launcher + " gcc -O2 -c $in -o $out\n")
	for i := range n {
		name := fmt.Sprintf("f%04d", i)
		text := fmt.Sprintf("int %s(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * %d; return s; }\n", name, i+1)
		if err := os.WriteFile(filepath.Join(dir, name+".c"), []byte(text), 0o644); err != nil {
			return fmt.Errorf("bench: waiting: %w", err)
		}
		objs = append(objs, name+".o")
		fmt.Fprintf(&nj, "build %s.o: cc %s.c\n", name, name)
	}
	mk := "all: " + strings.Join(objs, " ") + "\n%.o: %.c\n\t$(CC) -O2 -c $< -o $@\nclean:\n\trm -f *.o .ninja_log .ninja_deps\n"
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644); err != nil {
		return fmt.Errorf("bench: waiting: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "build.ninja"), []byte(nj.String()), 0o644); err != nil {
		return fmt.Errorf("bench: waiting: %w", err)
	}
	return nil
}

// runWaiting cleans the project and builds it once with args, on a new
// daemon of sess, sampling the processes whose executable is in exes.
func runWaiting(ctx context.Context, src string, args []string, sess *daemonSession, exes map[string]bool, o WaitingOptions) (WaitingRun, error) {
	env := append(os.Environ(), "MAKEFLAGS=", "MFLAGS=", "MAKELEVEL=", "NUMASTEAL_SLOT=", "NUMASTEAL_BUILD=")
	clean := exec.CommandContext(ctx, "make", "clean")
	clean.Dir, clean.Env = src, env
	if out, err := clean.CombinedOutput(); err != nil {
		return WaitingRun{}, fmt.Errorf("make clean: %w\n%s", err, tail(out, 2000))
	}
	p := sess.next()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir, cmd.Env = src, append(env, sess.env(p)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	stop := make(chan struct{})
	var peak waitingSample
	var samples int
	var daemonPSS int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(o.Interval)
		defer t.Stop()
		for {
			s := sampleWaiting(exes, filepath.Base(o.Launcher))
			samples++
			daemonPSS = max(daemonPSS, s.otherKB)
			if s.launchers > peak.launchers {
				peak.launchers, peak.launcherKB, peak.threads = s.launchers, s.launcherKB, s.threads
			}
			peak.totalKB = max(peak.totalKB, s.launcherKB+s.otherKB)
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	close(stop)
	wg.Wait()
	use, serr := stopDaemon(p)
	if err != nil {
		return WaitingRun{}, fmt.Errorf("%w\n%s", err, tail(out.Bytes(), 2000))
	}
	if serr != nil {
		return WaitingRun{}, serr
	}
	r := WaitingRun{
		WallS: wall.Seconds(), PeakPSSMB: float64(peak.totalKB) / 1024, PeakLaunch: peak.launchers,
		DaemonJobs: use.jobs, DaemonPSSMB: float64(daemonPSS) / 1024, SamplesTaken: samples,
	}
	if peak.launchers > 0 {
		r.PerLaunchKB = float64(peak.launcherKB) / float64(peak.launchers)
		r.ThreadsEach = float64(peak.threads) / float64(peak.launchers)
	}
	ents, _ := os.ReadDir(src)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".o") {
			r.Built++
		}
	}
	return r, nil
}

// waitingSample is one look at numasteal's processes: the launchers,
// their PSS and threads, and the PSS of the others (the daemon).
type waitingSample struct {
	launchers  int
	launcherKB int64
	threads    int
	otherKB    int64
	totalKB    int64
}

// sampleWaiting reads /proc: every process whose executable is one of
// exes, a launcher when its command name is launcher's (a launcher that
// handed off has the compiler's name, and is no longer numasteal's).
func sampleWaiting(exes map[string]bool, launcher string) waitingSample {
	var s waitingSample
	ents, _ := os.ReadDir("/proc")
	comm := launcher
	if len(comm) > 15 {
		comm = comm[:15]
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		base := "/proc/" + e.Name()
		exe, err := os.Readlink(base + "/exe")
		if err != nil || !exes[exe] {
			continue
		}
		pss, threads := procPSS(base)
		if c, _ := os.ReadFile(base + "/comm"); strings.TrimSpace(string(c)) == comm {
			s.launchers++
			s.launcherKB += pss
			s.threads += threads
		} else {
			s.otherKB += pss
		}
	}
	return s
}

// procPSS returns the PSS (kB, smaps_rollup) and thread count of the
// process at base (/proc/PID).
func procPSS(base string) (pssKB int64, threads int) {
	if b, err := os.ReadFile(base + "/smaps_rollup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "Pss:" {
				pssKB, _ = strconv.ParseInt(f[1], 10, 64)
				break
			}
		}
	}
	if b, err := os.ReadFile(base + "/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				threads, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
	}
	return pssKB, threads
}

// medianWaiting returns the median of each field of runs.
func medianWaiting(runs []WaitingRun) WaitingRun {
	med := func(f func(WaitingRun) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		return median(v)
	}
	return WaitingRun{
		WallS:       med(func(r WaitingRun) float64 { return r.WallS }),
		Built:       int(med(func(r WaitingRun) float64 { return float64(r.Built) })),
		PeakPSSMB:   med(func(r WaitingRun) float64 { return r.PeakPSSMB }),
		PeakLaunch:  int(med(func(r WaitingRun) float64 { return float64(r.PeakLaunch) })),
		PerLaunchKB: med(func(r WaitingRun) float64 { return r.PerLaunchKB }),
		ThreadsEach: med(func(r WaitingRun) float64 { return r.ThreadsEach }),
		DaemonJobs:  int64(med(func(r WaitingRun) float64 { return float64(r.DaemonJobs) })),
		DaemonPSSMB: med(func(r WaitingRun) float64 { return r.DaemonPSSMB }),
	}
}
