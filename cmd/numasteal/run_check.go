package main

import (
	"errors"
	"fmt"
	flag "github.com/spf13/pflag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/topology"
)

// The checks of "numasteal run" that come before anything runs.
//
// The rule: every check of input (flag values, the files to read, the
// paths the run will write, the tasks' directories) happens before the
// first task starts, names the flag, file and line, and exits 2
// (exitUsage). A bad input found after an hour of building loses the hour
// (an unwritable --trace used to make a successful build exit 1 and drop
// its trace), and one found while tasks run leaves some run and others not.
//
// The flag checks are functions of the parsed values, so that they do not
// depend on the flag package that parsed them; checkRun needs only to know
// which flags were given (isSet).

// runInput is what checkRun read for the run: the workload, and the
// history (nil without --history) with whether the run may save it.
type runInput struct {
	g        *buildgraph.Graph
	hist     *buildgraph.History
	saveHist bool
}

// checkRun runs every check of a "numasteal run" of file with flags f,
// printing each problem to stderr, and returns the workload and history
// it loaded and checked, which the run uses (a second load would cost its
// time and hold two graphs of a large file at once). ok is false when the
// run must stop with code (exitUsage). Warnings (a history with bad lines,
// which is used without them; a history that cannot be saved) are printed
// and do not stop the run.
//
// The history is the run's own bookkeeping, not something the user asked
// to make: when it cannot be saved (its directory takes no new file, the
// key of its command hashes cannot be read or made), the build runs and
// one warning says the history will not be saved. Only a --history that
// must not be replaced (not a history, not a regular file, the workload,
// the trace) stops the run.
func checkRun(f *runFlags, isSet func(name string) bool, file string, stderr io.Writer) (in runInput, code int, ok bool) {
	bad := func(err error) (runInput, int, bool) {
		fmt.Fprintf(stderr, "numasteal run: %v\n", err)
		return runInput{}, exitUsage, false
	}
	for _, err := range []error{checkJobs(f.jobs, isSet("jobs")), checkTimeout(f.timeout), checkMem(f.memMB)} {
		if err != nil {
			return bad(err)
		}
	}
	g, err := checkWorkload(file, f.format)
	if err != nil {
		return bad(err)
	}
	in.g = g
	outs := []outputPath{{"--trace", f.trace, false}, {"--history", f.history, true}}
	if err := checkOutputs(file, outs); err != nil {
		return bad(err)
	}
	if f.history != "" {
		hist, skipped, err := buildgraph.ReadHistoryFile(f.history)
		if err != nil {
			return bad(fmt.Errorf("--history %s: %w; refusing to replace it (remove it or name another file)", f.history, err))
		}
		if skipped != nil {
			for _, line := range strings.Split(skipped.Error(), "\n") {
				fmt.Fprintf(stderr, "numasteal run: warning: %s\n", line)
			}
			fmt.Fprintf(stderr, "numasteal run: warning: --history %s: the lines above are ignored, and dropped when the history is saved\n", f.history)
		}
		in.hist, in.saveHist = hist, true
		why := checkWritable(f.history)
		if why == nil {
			why = hist.KeyErr()
		}
		if why != nil {
			fmt.Fprintf(stderr, "numasteal run: warning: the history %s will not be saved (%v); the build runs\n", f.history, why)
			in.saveHist = false
		}
	}
	if err := checkTaskDirs(g); err != nil {
		return bad(err)
	}
	if f.jobs == 0 && f.farm.hosts == "" && !strings.Contains(os.Getenv("MAKEFLAGS"), "jobserver") {
		if err := checkFitsCPUs(g, f.memMB); err != nil {
			return bad(err)
		}
	}
	return in, exitOK, true
}

// flagsSet returns whether fs was given a flag of the name, for checkRun.
func flagsSet(fs *flag.FlagSet) func(name string) bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return func(name string) bool { return set[name] }
}

// checkJobs checks -j: 0 or more when given (its default, -1, means one
// slot per usable CPU and may not be written).
func checkJobs(jobs int, set bool) error {
	if jobs < -1 || set && jobs < 0 {
		return fmt.Errorf("-j %d: want 0 or more (leave -j out for one slot per usable CPU)", jobs)
	}
	return nil
}

// checkTimeout checks --timeout: 0 (no limit) or more.
func checkTimeout(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("--timeout %v: want 0 (no limit) or more", d)
	}
	return nil
}

// checkMem checks --mem: 0 (no limit) or more MB.
func checkMem(mb int) error {
	if mb < 0 {
		return fmt.Errorf("--mem %d: want 0 (no limit) or more MB", mb)
	}
	return nil
}

// checkWorkload loads the workload as the run will: only a regular file of
// at most buildgraph.MaxWorkloadBytes (a named pipe would block the run
// forever, /dev/zero exhaust memory).
func checkWorkload(file, format string) (*buildgraph.Graph, error) {
	fm, err := buildgraph.ParseFormat(format)
	if err != nil {
		return nil, fmt.Errorf("--format: %w", err)
	}
	return buildgraph.LoadFileAs(file, fm)
}

// outputPath is a file the run will write, and the flag that names it.
// A file the run may do without (the history) is optional: checkOutputs
// does not check that it can be written (checkRun warns instead).
type outputPath struct {
	flag, path string
	optional   bool
}

// checkOutputs checks the files the run writes (an empty path is none):
// none may be the workload or another output, and each must be writable
// where it is. A file is written to a temporary file in its directory and
// renamed over its path (buildgraph.WriteFileAtomic), so the directory
// must exist and take a new file, and the path must be absent, a regular
// file, or a link (which is replaced, not followed).
func checkOutputs(input string, outs []outputPath) error {
	in, _ := os.Stat(input)
	for i, o := range outs {
		if o.path == "" {
			continue
		}
		if fi, err := os.Stat(o.path); err == nil && in != nil && os.SameFile(fi, in) {
			return fmt.Errorf("%s %s: is the workload %s; writing it would destroy the workload", o.flag, o.path, input)
		}
		for _, p := range outs[:i] {
			if p.path != "" && samePath(p.path, o.path) {
				return fmt.Errorf("%s %s: is also %s; give them different files", o.flag, o.path, p.flag)
			}
		}
		if o.optional {
			continue
		}
		if err := checkWritable(o.path); err != nil {
			return fmt.Errorf("%s %s: %w", o.flag, o.path, err)
		}
	}
	return nil
}

// samePath reports whether a and b name one file: the same existing file,
// or the same path once cleaned and made absolute.
func samePath(a, b string) bool {
	fa, ea := os.Stat(a)
	fb, eb := os.Stat(b)
	if ea == nil && eb == nil {
		return os.SameFile(fa, fb)
	}
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == ab
}

// checkWritable checks that a file can be put at path by creating (and
// removing) a new file beside it.
func checkWritable(path string) error {
	if fi, err := os.Lstat(path); err == nil {
		switch m := fi.Mode(); {
		case m.IsDir():
			return errors.New("is a directory")
		case !m.IsRegular() && m&os.ModeSymlink == 0:
			return fmt.Errorf("exists and is not a regular file (%s); numasteal replaces the file it writes, by rename", buildgraph.FileKind(m))
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil {
		return fmt.Errorf("directory %s: %w", dir, unwrapPath(err))
	} else if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	tmp, err := os.CreateTemp(dir, ".numasteal-check-*")
	if err != nil {
		return fmt.Errorf("cannot create a file in %s: %w", dir, unwrapPath(err))
	}
	tmp.Close()
	os.Remove(tmp.Name())
	return nil
}

// unwrapPath returns the cause of an *os.PathError, whose path the message
// already names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// maxDirProblems bounds the missing directories checkTaskDirs reports.
const maxDirProblems = 10

// checkTaskDirs checks that every task's working directory exists and is
// a directory (each distinct one once), so that a missing one fails the
// run before any task starts rather than as "fork/exec /bin/sh: no such
// file or directory" once the task is reached. A relative directory is
// relative to numasteal's own, as the task's would be.
func checkTaskDirs(g *buildgraph.Graph) error {
	type use struct {
		first *buildgraph.Task
		n     int
	}
	seen := map[string]*use{}
	var order []string
	for _, t := range g.Tasks {
		if t.Cwd == "" {
			continue
		}
		if u := seen[t.Cwd]; u != nil {
			u.n++
			continue
		}
		seen[t.Cwd] = &use{first: t, n: 1}
		order = append(order, t.Cwd)
	}
	var errs []error
	more := 0
	for _, dir := range order {
		u := seen[dir]
		var why string
		if fi, err := os.Stat(dir); err != nil {
			why = unwrapPath(err).Error()
		} else if !fi.IsDir() {
			why = "not a directory"
		} else {
			continue
		}
		if len(errs) == maxDirProblems {
			more++
			continue
		}
		others := ""
		if u.n > 1 {
			others = fmt.Sprintf(" (and %d other tasks)", u.n-1)
		}
		e := &buildgraph.Error{Pos: u.first.Pos, Task: u.first.ID,
			Msg: fmt.Sprintf("task %q: working directory %q: %s%s", u.first.ID, dir, why, others), Err: buildgraph.ErrField}
		errs = append(errs, e)
	}
	if more > 0 {
		errs = append(errs, fmt.Errorf("and %d more missing directories", more))
	}
	return errors.Join(errs...)
}

// checkFitsCPUs checks, for -j 0, what the default -j checks through
// buildgraph.NewScheduler: that no task needs more CPU slots than there
// are usable CPUs (nor more memory than --mem). -j 0 gives the scheduler
// no slot limit, so without this a task of "cpus": 64 on a 2-CPU machine
// was accepted. Only when some task is too big is a scheduler built, for
// its errors: a second one of a large graph would cost the run's setup
// time and memory for nothing.
func checkFitsCPUs(g *buildgraph.Graph, memMB int) error {
	t, err := topology.Discover()
	if err != nil {
		return nil // the run reports it, as it always has
	}
	lim := buildgraph.Limits{Slots: t.Usable.Len(), MemMB: memMB}
	tooBig := func(task *buildgraph.Task) bool {
		return task.Slots() > lim.Slots || lim.MemMB > 0 && task.MemMB > lim.MemMB
	}
	if !slices.ContainsFunc(g.Tasks, tooBig) {
		return nil
	}
	_, err = buildgraph.NewScheduler(g, lim, nil)
	return err
}
