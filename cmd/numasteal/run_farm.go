package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/spf13/pflag"

	"github.com/numasteal/numasteal/buildrun"
	"github.com/numasteal/numasteal/farm"
)

// farmFlags are the compile-farm flags of "numasteal run".
type farmFlags struct {
	hosts  string
	distcc string
}

// define adds the flags to fs.
func (f *farmFlags) define(fs *pflag.FlagSet) {
	fs.StringVar(&f.hosts, "farm", "", "compile farm: distcc `HOSTS` (\"host[:port]/N ...\"), a hosts file, or env for $DISTCC_HOSTS; compiles go there while the local slots are busy")
	fs.StringVar(&f.distcc, "distcc", "distcc", "the distcc client `program` remote compiles run through (with --farm)")
}

// probeTimeout bounds the TCP connect that checks a farm host.
const probeTimeout = 2 * time.Second

// runFarm is the farm of one "numasteal run"; nil without --farm.
type runFarm struct {
	farm   *farm.Farm
	distcc string
}

// openFarm reads the host list, checks that distcc is installed and
// probes the hosts: those that do not answer start down (and are retried
// after their back-off). ok is false when the run must stop with code.
func openFarm(ctx context.Context, f farmFlags, stderr io.Writer) (rf *runFarm, code int, ok bool) {
	if f.hosts == "" {
		return nil, exitOK, true
	}
	hosts, err := farm.LoadHosts(f.hosts, os.Getenv, func(err error) { fmt.Fprintf(stderr, "numasteal run: warning: %v (skipped, as distcc does)\n", err) })
	if err != nil {
		fmt.Fprintf(stderr, "numasteal run: %v\n", err)
		return nil, exitUsage, false
	}
	distcc, err := exec.LookPath(f.distcc)
	if err != nil {
		fmt.Fprintf(stderr, "numasteal run: --farm needs distcc: %v\n", err)
		return nil, exitUsage, false
	}
	rf = &runFarm{farm: farm.New(hosts, farm.Config{}), distcc: distcc}
	for i, err := range rf.farm.ProbeAll(ctx, probeTimeout, time.Now()) {
		if err != nil {
			fmt.Fprintf(stderr, "numasteal run: farm host %s is down: %v\n", hosts[i].Addr(), err)
		}
	}
	return rf, exitOK, true
}

// options returns buildrun's farm options, nil without a farm.
func (rf *runFarm) options() *buildrun.FarmOptions {
	if rf == nil {
		return nil
	}
	return &buildrun.FarmOptions{Farm: rf.farm, Distcc: rf.distcc}
}

// printStats writes one line per host after the run.
func (rf *runFarm) printStats(w io.Writer) {
	if rf == nil {
		return
	}
	fmt.Fprintln(w, "farm:")
	for _, s := range rf.farm.Stats(time.Now()) {
		fmt.Fprintf(w, "  %s\n", s)
		if s.LastErr != "" {
			fmt.Fprintf(w, "    last failure: %s\n", s.LastErr)
		}
	}
}
