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

// JobserverOptions configure RunJobserver: a project of Compiles ready
// compiles built through the launcher by make -j (every compile forked
// at once, each launcher waiting for a grant) and by numasteal exec make
// -j (the README's way: make forks what the daemon's jobserver lets
// run), alternated Reps times. (A build tool that nothing throttles,
// ninja at a high -j, is RunLaunchWait's.)
type JobserverOptions struct {
	Compiles int
	Reps     int
	// Numasteal and Launcher are the binaries; Dir holds the project and
	// the daemons' sockets ("": a temporary directory, removed after).
	Numasteal, Launcher string
	Dir                 string
	// Interval is how often numasteal's processes are sampled; 0: 50 ms.
	Interval time.Duration
	// Progress, when set, is told each run as it starts.
	Progress func(rep int, row string)
}

// Jobserver rows, as in JobserverRow.Row.
const (
	JobserverMake = "make -j"
	JobserverExec = "numasteal exec make -j"
)

// JobserverRun is one build: its wall time, the objects it left, and the
// most that numasteal's processes (the daemon and the launchers
// together) held at one sample: proportional set size (PSS, shared pages
// divided among their sharers) and launchers alive; PerLauncher is the
// launchers' PSS over their count at the sample with the most launchers.
type JobserverRun struct {
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

// JobserverRow is one way of starting the build: its runs and their
// medians.
type JobserverRow struct {
	Row  string         `json:"row"`
	Args []string       `json:"args"`
	Runs []JobserverRun `json:"runs"`
	// Median is the median of each field over the runs.
	Median JobserverRun `json:"median"`
}

// JobserverResult is RunJobserver's answer.
type JobserverResult struct {
	Compiles int            `json:"compiles"`
	Rows     []JobserverRow `json:"rows"`
	Load     [3]float64     `json:"load_before"`
}

// RunJobserver builds the project each way, Reps rounds alternated, and
// samples numasteal's processes while each build runs.
func RunJobserver(ctx context.Context, o JobserverOptions) (*JobserverResult, error) {
	if o.Compiles < 1 || o.Reps < 1 {
		return nil, errors.New("bench: jobserver: want at least one compile and one rep")
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
			return nil, fmt.Errorf("bench: jobserver: %s is not installed (apt-get install %s)", tool, tool)
		}
	}
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "numasteal-jobserver-"); err != nil {
			return nil, fmt.Errorf("bench: jobserver: %w", err)
		}
		defer os.RemoveAll(dir)
	}
	src := filepath.Join(dir, "src")
	if err := writeJobserverProject(src, o.Compiles); err != nil {
		return nil, err
	}
	sess, err := newDaemonSession(dir, o.Numasteal)
	if err != nil {
		return nil, err
	}
	defer sess.close()
	cc := "CC=" + o.Launcher + " gcc"
	rows := []JobserverRow{
		{Row: JobserverMake, Args: []string{"make", "-j", cc}},
		{Row: JobserverExec, Args: []string{o.Numasteal, "exec", "make", "-j", cc}},
	}
	res := &JobserverResult{Compiles: o.Compiles, Load: loadAvg()}
	exes := map[string]bool{o.Numasteal: true, o.Launcher: true}
	for rep := 1; rep <= o.Reps; rep++ {
		for i := range rows {
			if o.Progress != nil {
				o.Progress(rep, rows[i].Row)
			}
			r, err := runJobserver(ctx, src, rows[i].Args, sess, exes, o)
			if err != nil {
				return nil, fmt.Errorf("bench: jobserver: %s: %w", rows[i].Row, err)
			}
			rows[i].Runs = append(rows[i].Runs, r)
		}
	}
	for i := range rows {
		rows[i].Median = medianJobserver(rows[i].Runs)
	}
	res.Rows = rows
	return res, nil
}

// writeJobserverProject writes the n small C sources of
// writeWaitProject and a Makefile that compiles each (no link: every
// compile is ready at once).
func writeJobserverProject(dir string, n int) error {
	if err := writeWaitProject(dir, n); err != nil {
		return err
	}
	objs := make([]string, n)
	for i := range objs {
		objs[i] = fmt.Sprintf("f%04d.o", i)
	}
	mk := "all: " + strings.Join(objs, " ") + "\n%.o: %.c\n\t$(CC) -O2 -c $< -o $@\nclean:\n\trm -f *.o\n"
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644); err != nil {
		return fmt.Errorf("bench: jobserver: %w", err)
	}
	return nil
}

// runJobserver cleans the project and builds it once with args, on a new
// daemon of sess, sampling the processes whose executable is in exes.
func runJobserver(ctx context.Context, src string, args []string, sess *daemonSession, exes map[string]bool, o JobserverOptions) (JobserverRun, error) {
	env := append(os.Environ(), "MAKEFLAGS=", "MFLAGS=", "MAKELEVEL=", "NUMASTEAL_SLOT=", "NUMASTEAL_BUILD=")
	clean := exec.CommandContext(ctx, "make", "clean")
	clean.Dir, clean.Env = src, env
	if out, err := clean.CombinedOutput(); err != nil {
		return JobserverRun{}, fmt.Errorf("make clean: %w\n%s", err, tail(out, 2000))
	}
	p := sess.next()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir, cmd.Env = src, append(env, sess.env(p)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	stop := make(chan struct{})
	var peak numastealSample
	var samples int
	var daemonPSS int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(o.Interval)
		defer t.Stop()
		for {
			s := sampleNumasteal(exes, filepath.Base(o.Launcher))
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
		return JobserverRun{}, fmt.Errorf("%w\n%s", err, tail(out.Bytes(), 2000))
	}
	if serr != nil {
		return JobserverRun{}, serr
	}
	r := JobserverRun{
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

// numastealSample is one look at numasteal's processes: the launchers,
// their PSS and threads, and the PSS of the others (the daemon).
type numastealSample struct {
	launchers  int
	launcherKB int64
	threads    int
	otherKB    int64
	totalKB    int64
}

// sampleNumasteal reads /proc: every process whose executable is one of
// exes, a launcher when its command name is launcher's (a launcher that
// handed off has the compiler's name, and is no longer numasteal's).
func sampleNumasteal(exes map[string]bool, launcher string) numastealSample {
	var s numastealSample
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
		pss := procFields(base+"/smaps_rollup", "Pss:")
		threads := procFields(base+"/status", "Threads:")
		if pss == nil || threads == nil {
			continue // it ended
		}
		if c, _ := os.ReadFile(base + "/comm"); strings.TrimSpace(string(c)) == comm {
			s.launchers++
			s.launcherKB += pss[0]
			s.threads += int(threads[0])
		} else {
			s.otherKB += pss[0]
		}
	}
	return s
}

// medianJobserver returns the median of each field of runs.
func medianJobserver(runs []JobserverRun) JobserverRun {
	med := func(f func(JobserverRun) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		return median(v)
	}
	return JobserverRun{
		WallS:       med(func(r JobserverRun) float64 { return r.WallS }),
		Built:       int(med(func(r JobserverRun) float64 { return float64(r.Built) })),
		PeakPSSMB:   med(func(r JobserverRun) float64 { return r.PeakPSSMB }),
		PeakLaunch:  int(med(func(r JobserverRun) float64 { return float64(r.PeakLaunch) })),
		PerLaunchKB: med(func(r JobserverRun) float64 { return r.PerLaunchKB }),
		ThreadsEach: med(func(r JobserverRun) float64 { return r.ThreadsEach }),
		DaemonJobs:  int64(med(func(r JobserverRun) float64 { return float64(r.DaemonJobs) })),
		DaemonPSSMB: med(func(r JobserverRun) float64 { return r.DaemonPSSMB }),
	}
}
