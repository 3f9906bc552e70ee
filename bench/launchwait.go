package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/numasteal/numasteal/launch"
)

// The launchers waiting for a slot: a build tool that nothing throttles
// (ninja at a high -j) starts a launcher for every command it may run,
// and all but the daemon's slots wait. The benchmark builds a project of
// trivial C files with CMake's Ninja generator and
// CMAKE_C_COMPILER_LAUNCHER (a build.ninja of its own when CMake is
// missing) at ninja -j Jobs, with a daemon of its own that the first
// launcher starts, and samples the launcher processes while the build
// runs: a launcher is waiting when its process still runs the launcher's
// executable and one of its threads is blocked reading the daemon's
// socket. A
// sample sums what /proc/PID/smaps_rollup and /proc/PID/status show of
// every waiting launcher.

// LaunchWaitOptions configures RunLaunchWait.
type LaunchWaitOptions struct {
	// Launcher is the numasteal-launch binary; Numasteal the numasteal
	// binary the launchers start the daemon from.
	Launcher, Numasteal string
	// Dir is the work directory: the project, its build, the daemon's
	// socket.
	Dir string
	// Compiles is the number of C files; 0 means 1,000.
	Compiles int
	// Jobs is ninja's -j; 0 means 256.
	Jobs int
	// CC is the compiler; "" means gcc.
	CC string
	// Every is the time between samples; 0 means 20 ms.
	Every time.Duration
	// NoCMake writes build.ninja directly even when cmake is installed.
	NoCMake bool
}

// LaunchWaitSample is one sample: the waiting launchers and their sums.
type LaunchWaitSample struct {
	Waiting         int   `json:"waiting"`
	PssKiB          int64 `json:"pss_kib"`
	RssKiB          int64 `json:"rss_kib"`
	PrivateDirtyKiB int64 `json:"private_dirty_kib"`
	Threads         int   `json:"threads"`
	MaxThreads      int   `json:"max_threads"` // of one launcher
}

// LaunchWaitResult is the build and its samples.
type LaunchWaitResult struct {
	Compiles  int     `json:"compiles"`
	Jobs      int     `json:"jobs"`
	Generator string  `json:"generator"`
	Built     int     `json:"objects_built"`
	WallS     float64 `json:"wall_s"`
	// Samples are the samples in which at least half the most launchers
	// ever seen waiting were waiting (the build's full phase).
	Samples []LaunchWaitSample `json:"samples"`
	// MostWaiting is the most launchers seen waiting in one sample.
	MostWaiting int `json:"most_waiting"`
	// PssKiB, PrivateDirtyKiB and Threads are per waiting launcher:
	// each sample's sum over its count, the median over Samples, with
	// the least and the most.
	PssKiB          [3]float64 `json:"pss_kib_per_launcher"`
	PrivateDirtyKiB [3]float64 `json:"private_dirty_kib_per_launcher"`
	RssKiB          [3]float64 `json:"rss_kib_per_launcher"`
	Threads         [3]float64 `json:"threads_per_launcher"`
	// MaxThreads is the most threads one waiting launcher had.
	MaxThreads int `json:"max_threads"`
}

// RunLaunchWait runs the build and samples its waiting launchers.
func RunLaunchWait(ctx context.Context, o LaunchWaitOptions) (*LaunchWaitResult, error) {
	if o.Compiles <= 0 {
		o.Compiles = 1000
	}
	if o.Jobs <= 0 {
		o.Jobs = 256
	}
	if o.CC == "" {
		o.CC = "gcc"
	}
	if o.Every <= 0 {
		o.Every = 20 * time.Millisecond
	}
	exe, err := filepath.EvalSymlinks(o.Launcher)
	if err != nil {
		return nil, fmt.Errorf("bench: launch wait: %w", err)
	}
	ninja, err := exec.LookPath("ninja")
	if err != nil {
		return nil, fmt.Errorf("bench: launch wait: %w", err)
	}
	cc, err := exec.LookPath(o.CC)
	if err != nil {
		return nil, fmt.Errorf("bench: launch wait: %w", err)
	}
	sock := filepath.Join(o.Dir, "sock")
	if len(sock) > maxSocketPath {
		return nil, fmt.Errorf("bench: launch wait: socket path %s is too long for a Unix socket", sock)
	}
	paths := launch.PathsFromEnv(func(k string) string {
		if k == "NUMASTEAL_SOCKET" {
			return sock
		}
		return ""
	})
	defer stopDaemon(paths)
	env := append(os.Environ(), "NUMASTEAL_SOCKET="+sock, "NUMASTEAL_BIN="+o.Numasteal,
		"NUMASTEAL_SERVE_FLAGS=--idle "+daemonIdle, "NUMASTEAL_BUILD=", "NUMASTEAL_SLOT=", "NUMASTEAL_LAUNCH=",
		"NUMASTEAL_MEASURE=")
	src := filepath.Join(o.Dir, "src")
	if err := writeWaitProject(src, o.Compiles); err != nil {
		return nil, err
	}
	build := filepath.Join(o.Dir, "build")
	res := &LaunchWaitResult{Compiles: o.Compiles, Jobs: o.Jobs}
	cmakePath, cmakeErr := exec.LookPath("cmake")
	if cmakeErr == nil && !o.NoCMake {
		res.Generator = "cmake -G Ninja -DCMAKE_C_COMPILER_LAUNCHER=numasteal-launch"
		cmd := exec.CommandContext(ctx, cmakePath, "-G", "Ninja", "-S", src, "-B", build,
			"-DCMAKE_C_COMPILER="+cc, "-DCMAKE_C_COMPILER_LAUNCHER="+o.Launcher)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("bench: launch wait: cmake: %w\n%s", err, tail(out, 2000))
		}
	} else {
		res.Generator = "build.ninja, the launcher before the compiler"
		if err := writeWaitNinja(build, src, o.Launcher, cc, o.Compiles); err != nil {
			return nil, err
		}
	}
	cmd := exec.CommandContext(ctx, ninja, "-C", build, "-j", strconv.Itoa(o.Jobs))
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: launch wait: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var all []LaunchWaitSample
	tick := time.NewTicker(o.Every)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case err := <-done:
			if err != nil {
				return nil, fmt.Errorf("bench: launch wait: ninja: %w\n%s", err, tail(out.Bytes(), 2000))
			}
			waiting = false
		case <-tick.C:
			if s := sampleWaiting(exe); s.Waiting > 0 {
				all = append(all, s)
			}
		}
	}
	res.WallS = time.Since(start).Seconds()
	res.Built = countObjects(build)
	if res.Built != o.Compiles {
		return nil, fmt.Errorf("bench: launch wait: %d objects built of %d", res.Built, o.Compiles)
	}
	for _, s := range all {
		res.MostWaiting = max(res.MostWaiting, s.Waiting)
	}
	var pss, dirty, rss, threads []float64
	for _, s := range all {
		if 2*s.Waiting < res.MostWaiting {
			continue
		}
		res.Samples = append(res.Samples, s)
		n := float64(s.Waiting)
		pss = append(pss, float64(s.PssKiB)/n)
		dirty = append(dirty, float64(s.PrivateDirtyKiB)/n)
		rss = append(rss, float64(s.RssKiB)/n)
		threads = append(threads, float64(s.Threads)/n)
		res.MaxThreads = max(res.MaxThreads, s.MaxThreads)
	}
	spread := func(xs []float64) [3]float64 {
		if len(xs) == 0 {
			return [3]float64{}
		}
		return [3]float64{median(xs), slices.Min(xs), slices.Max(xs)}
	}
	res.PssKiB, res.PrivateDirtyKiB, res.RssKiB, res.Threads = spread(pss), spread(dirty), spread(rss), spread(threads)
	if len(res.Samples) == 0 {
		return nil, errors.New("bench: launch wait: no launcher was seen waiting")
	}
	return res, nil
}

// writeWaitProject writes n trivial C files and a CMakeLists.txt that
// compiles them into one object library.
func writeWaitProject(src string, n int) error {
	if err := os.MkdirAll(src, 0o755); err != nil {
		return fmt.Errorf("bench: launch wait: %w", err)
	}
	var list strings.Builder
	for i := range n {
		name := fmt.Sprintf("f%04d.c", i)
		text := fmt.Sprintf("int f%04d(int x) { return x + %d; }\n", i, i)
		if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
			return fmt.Errorf("bench: launch wait: %w", err)
		}
		list.WriteString(" " + name)
	}
	cm := "cmake_minimum_required(VERSION 3.10)\nproject(launchwait C)\nadd_library(objs OBJECT" + list.String() + ")\n"
	if err := os.WriteFile(filepath.Join(src, "CMakeLists.txt"), []byte(cm), 0o644); err != nil {
		return fmt.Errorf("bench: launch wait: %w", err)
	}
	return nil
}

// writeWaitNinja writes build/build.ninja compiling the n files of src
// with the launcher before cc.
func writeWaitNinja(build, src, launcher, cc string, n int) error {
	if err := os.MkdirAll(build, 0o755); err != nil {
		return fmt.Errorf("bench: launch wait: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rule cc\n  command = %s %s -c $in -o $out\n", launcher, cc)
	for i := range n {
		fmt.Fprintf(&b, "build o/f%04d.o: cc %s/f%04d.c\n", i, src, i)
	}
	if err := os.WriteFile(filepath.Join(build, "build.ninja"), []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("bench: launch wait: %w", err)
	}
	return nil
}

// countObjects counts the .o files below dir.
func countObjects(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".o") {
			n++
		}
		return nil
	})
	return n
}

// sampleWaiting sums the memory and threads of the processes that run exe
// and wait in a read of a Unix socket (the daemon's grant).
func sampleWaiting(exe string) LaunchWaitSample {
	var s LaunchWaitSample
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return s
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := "/proc/" + e.Name()
		if l, err := os.Readlink(dir + "/exe"); err != nil || l != exe {
			continue
		}
		if !waitingInRead(pid) {
			continue
		}
		roll := procFields(dir+"/smaps_rollup", "Pss:", "Rss:", "Private_Dirty:")
		st := procFields(dir+"/status", "Threads:")
		// The launcher may have been granted meanwhile: what it showed
		// counts only while it still runs the launcher.
		if l, err := os.Readlink(dir + "/exe"); err != nil || l != exe || roll == nil || st == nil {
			continue
		}
		s.Waiting++
		s.PssKiB += roll[0]
		s.RssKiB += roll[1]
		s.PrivateDirtyKiB += roll[2]
		s.Threads += int(st[0])
		s.MaxThreads = max(s.MaxThreads, int(st[0]))
	}
	return s
}

// waitingInRead reports whether a thread of process pid sleeps in a read
// of a Unix stream socket (its kernel wait channel, when the kernel shows
// it; else the main thread's interruptible sleep). The launcher's main
// goroutine, which reads, may be on any of its threads.
func waitingInRead(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		return false
	}
	shown := false
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/task/" + t.Name() + "/wchan")
		if err != nil || len(b) == 0 || string(b) == "0" {
			continue
		}
		shown = true
		if strings.HasPrefix(string(b), "unix_stream_read") {
			return true
		}
	}
	if shown {
		return false
	}
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'S'
}

// procFields returns the values (kB, or counts) of the named fields of a
// /proc file of "Name: value [kB]" lines, in the order asked; nil when
// the file cannot be read or lacks one.
func procFields(path string, names ...string) []int64 {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	vals := make([]int64, len(names))
	found := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for i, n := range names {
			if rest, ok := strings.CutPrefix(line, n); ok {
				fs := strings.Fields(rest)
				if len(fs) > 0 {
					if v, err := strconv.ParseInt(fs[0], 10, 64); err == nil {
						vals[i] = v
						found++
					}
				}
			}
		}
	}
	if found < len(names) {
		return nil
	}
	return vals
}
