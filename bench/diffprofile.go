package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/runtime"
)

// diffprofile: the seed's way of showing where time went between two
// configurations: the flat samples of each function in profile B minus
// those in profile A, biggest gains first and biggest losses last, with the
// change as a percent of A's samples and a total line.

// shapeRe matches the hash of a generic instantiation's shape, which the
// table leaves out ("Deque[go.shape]").
var shapeRe = regexp.MustCompile(`go\.shape\.[0-9a-f]{16,}`)

// DiffRow is one function's change from profile A to profile B.
type DiffRow struct {
	Function string  `json:"function"`
	A        int64   `json:"a"`
	B        int64   `json:"b"`
	Delta    int64   `json:"delta"`
	Pct      float64 `json:"delta_pct"` // of A's samples; +Inf when A had none
}

// DiffProfiles returns every function's change from a to b, ordered as the
// seed's diffprofile prints them: by delta, largest gain first, largest
// loss last (ties by name), and the total as the last row.
func DiffProfiles(a, b *ProfileFlat) []DiffRow {
	names := map[string]bool{}
	for n := range a.Samples {
		names[n] = true
	}
	for n := range b.Samples {
		names[n] = true
	}
	var rows []DiffRow
	for n := range names {
		r := diffRow(n, a.Samples[n], b.Samples[n])
		if r.Delta != 0 {
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(x, y DiffRow) int {
		if c := cmp.Compare(y.Delta, x.Delta); c != 0 {
			return c
		}
		return strings.Compare(x.Function, y.Function)
	})
	return append(rows, diffRow("total", a.Total, b.Total))
}

func diffRow(name string, a, b int64) DiffRow {
	r := DiffRow{Function: name, A: a, B: b, Delta: b - a}
	if a != 0 {
		r.Pct = 100 * float64(b-a) / float64(a)
	}
	return r
}

// WriteDiffProfile prints rows (from DiffProfiles) as the seed's table:
// delta samples, delta %, function; the top gains and top losses (top ≤ 0:
// all), then the total.
func WriteDiffProfile(w io.Writer, rows []DiffRow, top int) {
	if len(rows) == 0 {
		return
	}
	body, total := rows[:len(rows)-1], rows[len(rows)-1]
	fmt.Fprintf(w, "%10s %9s  %s\n", "delta", "delta %", "function")
	pr := func(r DiffRow) {
		pct := fmt.Sprintf("%8.1f%%", r.Pct)
		if r.A == 0 {
			pct = "      new"
		}
		fmt.Fprintf(w, "%10d %9s  %s\n", r.Delta, pct, shapeRe.ReplaceAllString(r.Function, "go.shape"))
	}
	if top <= 0 || len(body) <= 2*top {
		for _, r := range body {
			pr(r)
		}
	} else {
		for _, r := range body[:top] {
			pr(r)
		}
		fmt.Fprintf(w, "%10s %9s  (%d more)\n", "...", "", len(body)-2*top)
		for _, r := range body[len(body)-top:] {
			pr(r)
		}
	}
	pr(total)
}

// DiffProfileOptions configures RunDiffProfile.
type DiffProfileOptions struct {
	// A and B are the balancing policies compared (balance.Names); "" means
	// "local" and "hierarchical".
	A, B string
	// FibN and Rounds size the work profiled in each configuration:
	// fib(FibN) with a task per call, Rounds times; 0 means 30 and 30.
	FibN, Rounds int
	// Workers caps the runtime's workers; 0 means every usable CPU.
	Workers int
}

// DiffProfileResult is the two profiles' diff.
type DiffProfileResult struct {
	Benchmark string    `json:"benchmark"`
	A         string    `json:"a"`
	B         string    `json:"b"`
	ATotal    int64     `json:"a_samples"`
	BTotal    int64     `json:"b_samples"`
	AWall     float64   `json:"a_wall_s"`
	BWall     float64   `json:"b_wall_s"`
	Perf      string    `json:"perf"`
	Rows      []DiffRow `json:"rows"`
	// Profiles are the raw pprof files, A then B, for `go tool pprof`.
	Profiles [2][]byte `json:"-"`
}

// RunDiffProfile profiles the same fork-join work (fib with a task per
// call) under the runtime with policy A and then B, with runtime/pprof, and
// diffs the profiles. perf is tried (`perf stat -e instructions true`) and
// its state reported; the profiles are pprof's either way.
func RunDiffProfile(ctx context.Context, o DiffProfileOptions) (*DiffProfileResult, error) {
	if o.A == "" {
		o.A = "local"
	}
	if o.B == "" {
		o.B = "hierarchical"
	}
	if o.FibN <= 0 {
		o.FibN = 30
	}
	if o.Rounds <= 0 {
		o.Rounds = 30
	}
	res := &DiffProfileResult{
		Benchmark: fmt.Sprintf("fib(%d) with a task per call, %d rounds", o.FibN, o.Rounds),
		A:         "policy " + o.A, B: "policy " + o.B, Perf: perfState(ctx),
	}
	var flats [2]*ProfileFlat
	for i, name := range []string{o.A, o.B} {
		pol, err := balance.ByName(name)
		if err != nil {
			return nil, fmt.Errorf("bench: diffprofile: %w", err)
		}
		prof, wall, err := profileFib(ctx, runtime.Config{Policy: pol, Workers: o.Workers}, o.FibN, o.Rounds)
		if err != nil {
			return nil, err
		}
		res.Profiles[i] = prof
		if flats[i], err = ParsePprof("policy "+name, prof); err != nil {
			return nil, err
		}
		if i == 0 {
			res.AWall = wall
		} else {
			res.BWall = wall
		}
	}
	res.ATotal, res.BTotal = flats[0].Total, flats[1].Total
	res.Rows = DiffProfiles(flats[0], flats[1])
	return res, nil
}

// profileFib runs fib(n) rounds times on a runtime of cfg under the CPU
// profiler and returns the profile and the wall seconds.
func profileFib(ctx context.Context, cfg runtime.Config, n, rounds int) ([]byte, float64, error) {
	rt, err := runtime.New(cfg)
	if err != nil {
		return nil, 0, fmt.Errorf("bench: diffprofile: %w", err)
	}
	defer rt.Close()
	fib := func() error {
		return rt.Go(ctx, func(c *runtime.Ctx) error { FibJoin(c, n); return nil }).Wait()
	}
	if err := fib(); err != nil { // warm up
		return nil, 0, fmt.Errorf("bench: diffprofile: %w", err)
	}
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return nil, 0, fmt.Errorf("bench: diffprofile: %w", err)
	}
	start := time.Now()
	for range rounds {
		if err := fib(); err != nil {
			pprof.StopCPUProfile()
			return nil, 0, fmt.Errorf("bench: diffprofile: %w", err)
		}
	}
	wall := time.Since(start).Seconds()
	pprof.StopCPUProfile()
	return buf.Bytes(), wall, nil
}

// perfState says whether perf can count instructions here.
func perfState(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "perf", "stat", "-e", "instructions", "true").CombinedOutput()
	switch {
	case err != nil:
		return "unavailable: " + strings.TrimSpace(firstLine(string(out)+" "+err.Error()))
	case strings.Contains(string(out), "<not supported>"):
		return "unavailable: perf stat reports instructions <not supported> (no PMU, e.g. a VM)"
	}
	return "available (profiles here are runtime/pprof's; perf record -g -p PID works alongside)"
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
