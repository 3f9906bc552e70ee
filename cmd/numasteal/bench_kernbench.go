package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/numasteal/numasteal/bench"
)

func runBenchKernbench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal bench kernbench", stderr)
	corpus := fs.String("corpus", "cgen", "the build: cgen (generated C project), cgen:SEED or debian:SRCPKG (recorded commands); linux:tinyconfig or debian-cmake:SRCPKG (the project's own build system)")
	quick := fs.Bool("quick", false, "a small generated corpus (1-2 minutes on 2 CPUs)")
	files := fs.Int("files", 0, "translation units of the generated corpus (0: 496, or 16 with --quick)")
	reps := fs.Int("reps", 3, "runs of each runner and -j level; medians are reported")
	asJSON := fs.Bool("json", false, "print one JSON object")
	runners := fs.String("runners", "", "comma-separated subset of numasteal,make,ninja,xargs")
	jobs := fs.String("jobs", "", "comma-separated subset of 2x,16x,max")
	work := fs.String("dir", "", "work directory (default: a temporary one, removed after)")
	svg := fs.String("svg", "", "write the timeline of the last numasteal max run to this SVG file")
	nsBin := fs.String("numasteal", "", "the numasteal binary measured (default: this one)")
	launcher := fs.String("launcher", "", "native corpora: the numasteal-launch binary (default: numasteal-launch beside the numasteal measured)")
	two := fs.Bool("two", false, "native corpora: add the rows of two builds at once, plainly and through one daemon")
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if bench.IsNativeCorpus(*corpus) {
		return runKernbenchNative(ctx, fs, bench.NativeOptions{
			Spec: *corpus, Numasteal: *nsBin, Launcher: *launcher, Reps: *reps, Two: *two,
		}, nativeOutput{dir: *work, json: *asJSON, quiet: *quiet}, stdout, stderr)
	}
	for _, name := range []string{"launcher", "two"} {
		if fs.Changed(name) {
			return usageError(fs, stderr, fmt.Errorf("--%s applies to the native corpora (linux:tinyconfig, debian-cmake:SRCPKG), not %s", name, *corpus))
		}
	}
	self := *nsBin
	if self == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "numasteal bench kernbench: finding this binary: %v\n", err)
			return exitFail
		}
		self = exe
	}
	var err error
	dir := *work
	if dir == "" {
		if dir, err = os.MkdirTemp("", "kernbench-"); err != nil {
			fmt.Fprintf(stderr, "numasteal bench kernbench: %v\n", err)
			return exitFail
		}
		defer os.RemoveAll(dir)
	}
	progress, done := benchStatus(stderr, *quiet)
	c, err := bench.LoadCorpus(ctx, bench.CorpusOptions{
		Spec: *corpus, Quick: *quick, Files: *files, Dir: dir,
		Log: func(s string) { progress("corpus: " + s) },
	})
	if err != nil {
		done()
		fmt.Fprintf(stderr, "numasteal bench kernbench: %v\n", err)
		return exitFail
	}
	o := bench.KernbenchOptions{Corpus: c, Numasteal: self, Reps: *reps}
	if *runners != "" {
		o.Runners = strings.Split(*runners, ",")
	}
	if *jobs != "" {
		o.Jobs = strings.Split(*jobs, ",")
	}
	if *svg != "" {
		o.Trace = filepath.Join(dir, "numasteal-max.trace.json")
	}
	o.Progress = func(p bench.KernbenchProgress) {
		left := "estimating"
		if p.Left > 0 {
			left = p.Left.Round(1e9).String() + " left"
		}
		progress(fmt.Sprintf("run %d/%d: %-9s -j %-3s repetition %d/%d, %s", p.Run, p.Runs, p.Runner, p.Jobs, p.Rep, p.Reps, left))
	}
	r, err := bench.RunKernbench(ctx, o)
	done()
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench kernbench: %v\n", err)
		return exitFail
	}
	if *svg != "" {
		if err := writeTimelineSVG(o.Trace, *svg, r.Corpus); err != nil {
			fmt.Fprintf(stderr, "numasteal bench kernbench: %v\n", err)
			return exitFail
		}
	}
	if *asJSON {
		return writeJSON(stdout, r)
	}
	bench.WriteKernbenchTable(stdout, r)
	return exitOK
}

// writeTimelineSVG draws the Chrome trace at tracePath into svgPath.
func writeTimelineSVG(tracePath, svgPath, title string) error {
	data, err := os.ReadFile(tracePath)
	if err != nil {
		return fmt.Errorf("reading trace: %w", err)
	}
	spans, err := bench.ParseTraceSpans(tracePath, data)
	if err != nil {
		return err
	}
	f, err := os.Create(svgPath)
	if err != nil {
		return fmt.Errorf("writing timeline: %w", err)
	}
	if err := bench.TimelineSVG(f, "numasteal run -j 0: "+title, spans); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// benchStatus returns a progress printer for the long benchmarks: one
// rewritten line on a terminal, plain lines otherwise (nothing when quiet),
// and a function that clears the line at the end.
func benchStatus(w io.Writer, quiet bool) (show func(string), done func()) {
	switch {
	case quiet:
		return func(string) {}, func() {}
	case isTerminal(w):
		return func(s string) { fmt.Fprintf(w, "\r\033[K%s", s) }, func() { fmt.Fprint(w, "\r\033[K") }
	}
	return func(s string) { fmt.Fprintln(w, s) }, func() {}
}
