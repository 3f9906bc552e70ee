package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"slices"
	"strconv"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/runtime"
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// PeersOptions configure RunForkJoinPeers. Zero fields mean defaults.
type PeersOptions struct {
	FibN   int // fib(FibN); default 30
	Cutoff int // the cutoff workload forks only at n >= Cutoff; default 12
	SumN   int // int64s summed; default 100M
	SortN  int // ints merge-sorted; default 10M
	Joins  int // empty spawn+joins timed in one run; default 1<<20
	Reps   int // alternating rounds; default 5
	// CacheDir keeps the built peer programs for later runs, one
	// directory per source and toolchain version; "" builds them in a
	// temporary directory removed when the run ends.
	CacheDir string
	// NoPeers runs only the Go contenders (no peer is built or run).
	NoPeers  bool
	Topology *topology.Topology // nil = the live machine
	// Progress, when set, is called before each measurement block.
	Progress func(contender string, rep, reps int)
}

func (o *PeersOptions) defaults() error {
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&o.FibN, 30)
	def(&o.Cutoff, 12)
	def(&o.SumN, 100_000_000)
	def(&o.SortN, 10_000_000)
	def(&o.Joins, 1<<20)
	def(&o.Reps, 5)
	switch {
	case o.FibN < 2 || o.FibN > 60:
		return fmt.Errorf("bench: fib n %d: want 2..60", o.FibN)
	case o.Cutoff < 2 || o.Cutoff > o.FibN:
		return fmt.Errorf("bench: cutoff %d: want 2..%d (fib n)", o.Cutoff, o.FibN)
	case o.SumN < 1 || o.SortN < 1 || o.Joins < 1 || o.Reps < 1:
		return fmt.Errorf("bench: sizes and reps must be positive (sum %d, sort %d, joins %d, reps %d)",
			o.SumN, o.SortN, o.Joins, o.Reps)
	}
	return nil
}

// PeersResult is bench forkjoin --peers: every runtime on every workload.
type PeersResult struct {
	FibN        int        `json:"fib_n"`
	Cutoff      int        `json:"cutoff"`
	SumN        int        `json:"sum_n"`
	SortN       int        `json:"sort_n"`
	Joins       int        `json:"joins"`
	Reps        int        `json:"reps"`
	Threads     int        `json:"threads"` // of the parallel runs; 1 on a one-CPU machine
	FibForks    int64      `json:"fib_forks"`
	CutoffForks int64      `json:"cutoff_forks"`
	PinnedCPU   int        `json:"pinned_cpu"` // where the one-thread runs ran
	LoadStart   [3]float64 `json:"load_start"`
	LoadEnd     [3]float64 `json:"load_end"`
	Rows        []PeerRow  `json:"rows"`
	Skipped     []PeerSkip `json:"skipped"`
}

// PeerRow is one runtime on one workload, over the rounds. Ratios are to
// the language's own serial loop measured in the same round (on one
// thread: CPU time over serial CPU time; on Threads threads: wall time
// over it). Zero Stats were not measured.
type PeerRow struct {
	Workload string `json:"workload"` // fib, cutoff, sum, sort, spawn
	Runtime  string `json:"runtime"`
	SerialNs Stat   `json:"serial_ns"`
	Ratio1   Stat   `json:"ratio_1"`
	RatioN   Stat   `json:"ratio_n"`
	// NsPerFork is the run's time over its forks (fib, cutoff) or its
	// spawn+joins (spawn).
	NsPerFork1 Stat `json:"ns_per_fork_1"`
	NsPerForkN Stat `json:"ns_per_fork_n"`
	// WaitN is the time the process's threads waited on a run queue for a
	// CPU in the parallel run, as a fraction of its wall time: where it is
	// not small, the wall time measured the machine, not the runtime.
	WaitN Stat `json:"wait_n"`
}

// Stat is the median and range of a row's rounds.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

func statOf(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	return Stat{Median: median(xs), Min: slices.Min(xs), Max: slices.Max(xs), N: len(xs)}
}

// RunForkJoinPeers runs the fork-join workloads (fib with a fork per call,
// fib with a leaf cutoff, a parallel sum, a merge sort, an empty
// spawn+join) through numasteal's Jobs.Join, Ctx.Join and ParallelFor, Go's
// goroutines and errgroup, and the peer programs of bench/peers (Rayon,
// oneTBB, OpenMP) built on this machine, alternating them round by round:
// the Go contenders, then each peer on one pinned thread and on two. Peers
// whose toolchain is missing are skipped and named with the Debian
// packages to install. GOMAXPROCS is set to the parallel runs' thread
// count while it runs.
func RunForkJoinPeers(ctx context.Context, o PeersOptions) (PeersResult, error) {
	if err := o.defaults(); err != nil {
		return PeersResult{}, err
	}
	r := PeersResult{FibN: o.FibN, Cutoff: o.Cutoff, SumN: o.SumN, SortN: o.SortN, Joins: o.Joins, Reps: o.Reps,
		FibForks: forks(o.FibN, 2), CutoffForks: forks(o.FibN, o.Cutoff)}
	var peers []builtPeer
	if !o.NoPeers {
		dir := o.CacheDir
		if dir == "" {
			tmp, err := os.MkdirTemp("", "numasteal-forkjoin-peers-")
			if err != nil {
				return PeersResult{}, fmt.Errorf("bench: peers: %w", err)
			}
			defer os.RemoveAll(tmp)
			dir = tmp
		}
		var err error
		if peers, r.Skipped, err = buildPeers(ctx, dir); err != nil {
			return PeersResult{}, err
		}
	}
	one, err := runtime.New(runtime.Config{Topology: o.Topology, Workers: 1})
	if err != nil {
		return PeersResult{}, err
	}
	defer one.Close()
	all, err := runtime.New(runtime.Config{Topology: o.Topology, Workers: 2})
	if err != nil {
		return PeersResult{}, err
	}
	defer all.Close()
	r.Threads = all.Workers()
	r.PinnedCPU = one.Topology().Usable.First()
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(r.Threads))
	threadCounts := []int{1}
	if r.Threads > 1 {
		threadCounts = append(threadCounts, r.Threads)
	}

	g := newGoPeers(o, one, all)
	var samples []fjSample
	r.LoadStart = loadAvg()
	for rep := range o.Reps {
		if err := ctx.Err(); err != nil {
			return PeersResult{}, err
		}
		if o.Progress != nil {
			o.Progress("numasteal and Go", rep+1, o.Reps)
		}
		s, err := g.round(ctx)
		if err != nil {
			return PeersResult{}, err
		}
		samples = append(samples, s...)
		for _, p := range peers {
			for _, t := range threadCounts {
				if o.Progress != nil {
					o.Progress(fmt.Sprintf("%s, %d thread(s)", p.spec.name, t), rep+1, o.Reps)
				}
				s, err := runPeer(ctx, p, o, t, r.PinnedCPU)
				if err != nil {
					return PeersResult{}, err
				}
				samples = append(samples, s...)
			}
		}
	}
	r.LoadEnd = loadAvg()
	r.Rows = peerRows(samples, r)
	return r, nil
}

// runPeer runs peer p once on threads threads (pinned to cpu when one),
// checks its answers and returns its samples.
func runPeer(ctx context.Context, p builtPeer, o PeersOptions, threads, cpu int) ([]fjSample, error) {
	cmd := exec.CommandContext(ctx, p.bin, strconv.Itoa(threads), strconv.Itoa(o.FibN), strconv.Itoa(o.Cutoff),
		strconv.Itoa(o.SumN), strconv.Itoa(o.SortN), strconv.Itoa(o.Joins))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var err error
	if threads == 1 {
		err = affinity.StartPinned(cmd, cpuset.Of(cpu))
	} else {
		err = cmd.Start()
	}
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return nil, fmt.Errorf("bench: peer %s on %d thread(s): %w\n%s", p.spec.name, threads, err, tail(stderr.Bytes(), 2000))
	}
	out, err := ParsePeerOutput(stdout.Bytes())
	if err != nil {
		return nil, fmt.Errorf("bench: peer %s: %w", p.spec.name, err)
	}
	if out.Threads != threads {
		return nil, fmt.Errorf("bench: peer %s ran %d threads, asked for %d", p.spec.name, out.Threads, threads)
	}
	fib := uint64(fibSerial(o.FibN))
	want := map[string]uint64{"fib": fib, "cutoff": fib, "sum": uint64(o.SumN) * uint64(o.SumN-1) / 2,
		"sort": 1, "spawn": uint64(o.Joins)}
	for _, s := range out.Samples {
		if s.Check != want[s.Workload] {
			return nil, fmt.Errorf("bench: peer %s: %s %s gave %d, want %d", p.spec.name, s.Workload, s.Variant, s.Check, want[s.Workload])
		}
	}
	var res []fjSample
	for _, w := range peerWorkloads {
		par := out.sample(w, "par")
		var serial float64
		switch w {
		case "fib", "cutoff":
			serial = serialNs(out.sample("fib", "serial"))
		case "sum", "sort":
			serial = serialNs(out.sample(w, "serial"))
		}
		ns := float64(par.WallNs)
		if threads == 1 {
			ns = float64(par.CPUNs)
		}
		res = append(res, fjSample{runtime: peerLabel(p, out, w), workload: w, threads: threads, ns: ns, serialNs: serial,
			wallNs: float64(par.WallNs), waitNs: float64(par.WaitNs)})
	}
	return res, nil
}

// serialNs is a peer's serial run's time: the smaller of its process CPU
// time and its wall time. The serial loop runs on one thread, whose own
// CPU time bounds both from below: the process's exceeds it while idle
// pool threads spin after a parallel region (OpenMP's do), the wall time
// while the thread waits for a CPU.
func serialNs(s PeerSample) float64 { return float64(min(s.CPUNs, s.WallNs)) }

// peerRows folds the samples into rows, by workload in table order, then
// by runtime in order of first appearance.
func peerRows(samples []fjSample, r PeersResult) []PeerRow {
	type acc struct {
		serial, r1, rn, f1, fn, wait []float64
	}
	accs := map[[2]string]*acc{}
	var order [][2]string
	for _, s := range samples {
		k := [2]string{s.workload, s.runtime}
		a := accs[k]
		if a == nil {
			a = &acc{}
			accs[k] = a
			order = append(order, k)
		}
		var perFork float64
		switch s.workload {
		case "fib":
			perFork = s.ns / float64(r.FibForks)
		case "cutoff":
			perFork = s.ns / float64(r.CutoffForks)
		case "spawn":
			perFork = s.ns / float64(r.Joins)
		}
		if s.serialNs > 0 {
			a.serial = append(a.serial, s.serialNs)
		}
		if s.threads == 1 {
			if s.serialNs > 0 {
				a.r1 = append(a.r1, s.ns/s.serialNs)
			}
			if perFork > 0 {
				a.f1 = append(a.f1, perFork)
			}
			continue
		}
		if s.serialNs > 0 {
			a.rn = append(a.rn, s.ns/s.serialNs)
		}
		if perFork > 0 {
			a.fn = append(a.fn, perFork)
		}
		if s.wallNs > 0 {
			a.wait = append(a.wait, s.waitNs/s.wallNs)
		}
	}
	var rows []PeerRow
	for _, w := range peerWorkloads {
		for _, k := range order {
			if k[0] != w {
				continue
			}
			a := accs[k]
			rows = append(rows, PeerRow{Workload: w, Runtime: k[1], SerialNs: statOf(a.serial),
				Ratio1: statOf(a.r1), RatioN: statOf(a.rn), NsPerFork1: statOf(a.f1), NsPerForkN: statOf(a.fn),
				WaitN: statOf(a.wait)})
		}
	}
	return rows
}
