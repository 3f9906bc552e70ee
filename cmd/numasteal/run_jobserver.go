package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/numasteal/numasteal/jobserver"
)

// The GNU make jobserver flags of "numasteal run" and what it prints about
// the jobserver. The policy lives in the libraries: jobserver.OpenPool joins
// an inherited jobserver or serves one, and counts the tokens of killed
// children back; buildrun.Options.Jobserver takes each task's slot from it
// and hands it to the task's child.

// jobserverFlags are the jobserver flags of "numasteal run".
type jobserverFlags struct {
	serve bool   // --jobserver
	style string // --jobserver-style
}

// define adds the jobserver flags to fs.
func (jf *jobserverFlags) define(fs *pflag.FlagSet) {
	fs.BoolVar(&jf.serve, "jobserver", false, "serve a GNU make jobserver of -j slots to the tasks' children (MAKEFLAGS), shared with numasteal's own tasks; under a make jobserver numasteal joins that one instead")
	fs.StringVar(&jf.style, "jobserver-style", "pipe", "jobserver form with --jobserver: pipe (every make) or fifo (make ≥ 4.4, numasteal)")
}

// check validates the flags before anything runs.
func (jf *jobserverFlags) check() error {
	if jf.style != "pipe" && jf.style != "fifo" {
		return fmt.Errorf("unknown --jobserver-style %q (want pipe or fifo)", jf.style)
	}
	return nil
}

// openJobserver opens the jobserver of a run: the inherited one, else a
// served one of jobs slots (cpus for -j 0) with --jobserver, else none
// (nil). An inherited jobserver that cannot be used is reported once on
// stderr, and the run uses its own -j. held is told how many tokens the
// run holds, each time that changes.
func openJobserver(jf jobserverFlags, env []string, jobs, cpus int, stderr io.Writer, held func(int)) (*jobserver.Pool, error) {
	size := jobs
	if size < 1 {
		size = max(cpus, 1) // -j 0: admit everything, serve one slot per CPU
	}
	return jobserver.OpenPool(env, jobserver.PoolOptions{
		Serve: jf.serve,
		Slots: size,
		FIFO:  jf.style == "fifo",
		Held:  held,
		Unusable: func(err error) {
			fmt.Fprintf(stderr, "numasteal run: %v; using -j %d\n", err, max(jobs, 0))
		},
	})
}

// closeJobserver closes the jobserver once every task is gone (writing
// back any token still held, also after an interrupt) and reports on
// stderr the tokens recovered from killed children and any failed
// write-back.
func closeJobserver(p *jobserver.Pool, stderr io.Writer) {
	r, err := p.Close()
	if r.Recovered > 0 || r.Drained > 0 {
		drained := ""
		if r.Drained > 0 {
			drained = fmt.Sprintf(", drained %d surplus", r.Drained)
		}
		fmt.Fprintf(stderr, "numasteal run: jobserver: recovered %d tokens lost by killed children%s (%d slots)\n",
			r.Recovered, drained, r.Slots)
	}
	if r.ReleaseErr != nil {
		fmt.Fprintf(stderr, "numasteal run: %d jobserver tokens not written back: %v\n", r.ReleaseFailures, r.ReleaseErr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "numasteal run: closing the jobserver: %v\n", err)
	}
}
