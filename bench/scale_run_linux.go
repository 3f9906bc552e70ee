//go:build linux

package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// RunScaleRuns runs o.Numasteal's `run` on command files of o.Ns `true`
// lines at each of o.Jobs, alternating the -j values and the counts, and
// returns one row per -j and count, in that order.
func RunScaleRuns(ctx context.Context, o ScaleRunOptions) ([]ScaleRunRow, error) {
	if o.Reps <= 0 {
		o.Reps = 3
	}
	if len(o.Jobs) == 0 {
		o.Jobs = []int{DefaultJobs}
	}
	truePath, err := exec.LookPath("true")
	if err != nil {
		return nil, fmt.Errorf("bench: scale run: %w", err)
	}
	files := make([]string, len(o.Ns))
	for i, n := range o.Ns {
		if n < 1 {
			return nil, fmt.Errorf("bench: scale run: bad command count %d", n)
		}
		files[i] = filepath.Join(o.Dir, fmt.Sprintf("true-%d.txt", n))
		if err := writeTrueFile(files[i], truePath, n); err != nil {
			return nil, err
		}
	}
	type sample struct {
		wall, own, child []float64
		peak             int64
	}
	samples := make([]sample, len(o.Jobs)*len(o.Ns)) // by -j, then count
	for r := 0; r < o.Reps; r++ {
		for k, jobs := range o.Jobs {
			for i, n := range o.Ns {
				if o.Progress != nil {
					o.Progress(fmt.Sprintf("numasteal run of %d commands%s, repetition %d/%d", n, jobsText(jobs), r+1, o.Reps))
				}
				m, err := runCounted(ctx, o.Numasteal, jobs, files[i])
				if err != nil {
					return nil, err
				}
				s := &samples[k*len(o.Ns)+i]
				s.wall = append(s.wall, m.wall.Seconds()*1e6/float64(n))
				s.own = append(s.own, m.own*1e6/float64(n))
				s.child = append(s.child, m.child*1e6/float64(n))
				s.peak = max(s.peak, m.rssKiB)
			}
		}
	}
	rows := make([]ScaleRunRow, len(samples))
	for k, jobs := range o.Jobs {
		for i, n := range o.Ns {
			s := &samples[k*len(o.Ns)+i]
			rows[k*len(o.Ns)+i] = ScaleRunRow{Jobs: jobs, N: n, WallUSPerTask: median(s.wall), OwnCPUUS: median(s.own),
				ChildCPUUS: median(s.child), PeakRSSKiB: s.peak}
		}
	}
	return rows, nil
}

// jobsText is " at -j N" for a progress line, "" for the default.
func jobsText(jobs int) string {
	if jobs == DefaultJobs {
		return ""
	}
	return " at -j " + strconv.Itoa(jobs)
}

// writeTrueFile writes a command file of n lines "TRUE" (the path of
// true).
func writeTrueFile(path, truePath string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: scale run: %w", err)
	}
	w := bufio.NewWriter(f)
	for range n {
		w.WriteString(truePath)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("bench: scale run: %w", err)
	}
	return f.Close()
}

// countedRun is one numasteal run: its wall time, its own and its
// children's CPU seconds, and its peak RSS.
type countedRun struct {
	wall       time.Duration
	own, child float64
	rssKiB     int64
}

// runCounted runs numasteal run on file at -j jobs (DefaultJobs: none)
// and reads the process's own CPU time from /proc between its exit and
// its reaping (waitid WNOWAIT): the parent's wait4 rusage would add the
// commands' time to it.
func runCounted(ctx context.Context, numasteal string, jobs int, file string) (countedRun, error) {
	args := []string{"run", "--progress", "none", "--history=", "-q"}
	if jobs != DefaultJobs {
		args = append(args, "-j", strconv.Itoa(jobs))
	}
	cmd := exec.CommandContext(ctx, numasteal, append(args, file)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return countedRun{}, fmt.Errorf("bench: scale run: %w", err)
	}
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	wall := time.Since(start)
	var m countedRun
	m.wall = wall
	data, statErr := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	err := cmd.Wait()
	if err != nil {
		return m, fmt.Errorf("bench: scale run: numasteal run %s: %w\n%s", file, err, tail([]byte(stderr.String()), 2000))
	}
	if statErr != nil {
		return m, fmt.Errorf("bench: scale run: %w", statErr)
	}
	t, err := parseProcStatTimes(data)
	if err != nil {
		return m, err
	}
	m.own, m.child = t[0]+t[1], t[2]+t[3]
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.rssKiB = ru.Maxrss
	}
	return m, nil
}
