package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/numasteal/numasteal/bench"
)

// nativeOutput is where and how kernbench's native rows are reported.
type nativeOutput struct {
	dir   string // --dir; "" for a temporary one
	json  bool
	quiet bool
}

// runKernbenchNative is "numasteal bench kernbench" on a native corpus
// (linux:tinyconfig, debian-cmake:SRCPKG): the project's own build
// system, with and without the launcher (bench.RunNative). Every mistake
// of the command line, and a missing binary or tool, is reported before
// anything runs.
func runKernbenchNative(ctx context.Context, fs *pflag.FlagSet, o bench.NativeOptions, out nativeOutput, stdout, stderr io.Writer) int {
	for _, name := range []string{"quick", "files", "runners", "jobs", "svg"} {
		if fs.Changed(name) {
			return usageError(fs, stderr, fmt.Errorf("--%s applies to the recorded corpora (cgen, debian:SRCPKG), not %s", name, o.Spec))
		}
	}
	if _, err := bench.ParseNativeSpec(o.Spec); err != nil {
		return usageError(fs, stderr, err)
	}
	if o.Numasteal == "" {
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "numasteal bench kernbench: finding this binary: %v\n", err)
			return exitFail
		}
		o.Numasteal = exe
	}
	if err := o.Check(); err != nil {
		fmt.Fprintf(stderr, "numasteal bench kernbench: %v\n", err)
		return exitFail
	}
	o.Dir = out.dir
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "kernbench-")
		if err != nil {
			fmt.Fprintf(stderr, "numasteal bench kernbench: %v\n", err)
			return exitFail
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	progress, done := benchStatus(stderr, out.quiet)
	o.Log = func(s string) { progress("corpus: " + s) }
	o.Progress = func(p bench.KernbenchProgress) {
		left := "estimating"
		if p.Left > 0 {
			left = p.Left.Round(1e9).String() + " left"
		}
		progress(fmt.Sprintf("run %d/%d: %-24s repetition %d/%d, %s", p.Run, p.Runs, p.Runner, p.Rep, p.Reps, left))
	}
	r, err := bench.RunNative(ctx, o)
	done()
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench kernbench: %v\n", err)
		return exitFail
	}
	if out.json {
		return writeJSON(stdout, r)
	}
	bench.WriteNativeTable(stdout, r)
	return exitOK
}
