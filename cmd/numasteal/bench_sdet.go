package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/numasteal/numasteal/bench"
)

func runBenchSDET(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal bench sdet", stderr)
	ns := fs.StringP("n", "n", "1,2,4,8,16,32,64,128", "comma-separated numbers of concurrent scripts")
	dur := fs.Duration("time", 2*time.Second, "how long each contender runs at each N, per repetition")
	reps := fs.Int("reps", 4, "repetitions, alternating which contender runs first (median and range of the ratio)")
	slots := fs.Int("slots", 0, "numasteal's process slots: 0 one per worker, -1 one per script")
	quick := fs.Bool("quick", false, "N up to 32, 1 s per point, 2 repetitions")
	asJSON := fs.Bool("json", false, "print one JSON object")
	svg := fs.String("svg", "", "write throughput against N to this SVG file")
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	o := bench.SDETOptions{Duration: *dur, Reps: *reps, Slots: *slots}
	if *quick {
		*ns, o.Duration, o.Reps = "1,2,4,8,16,32", time.Second, 2
	}
	for _, f := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintf(stderr, "numasteal bench sdet: -n: %q is not a positive number\n", f)
			return exitUsage
		}
		o.Ns = append(o.Ns, n)
	}
	show, done := benchStatus(stderr, *quiet)
	o.Progress = func(p bench.SDETProgress) {
		show(fmt.Sprintf("sdet: %-9s N=%-3d repetition %d/%d, about %s left", p.Contender, p.N, p.Rep, p.Reps, p.Left.Round(time.Second)))
	}
	r, err := bench.RunSDET(ctx, o)
	done()
	if err != nil {
		fmt.Fprintf(stderr, "numasteal bench sdet: %v\n", err)
		return exitFail
	}
	if *svg != "" {
		if err := writeSDETSVG(*svg, r); err != nil {
			fmt.Fprintf(stderr, "numasteal bench sdet: %v\n", err)
			return exitFail
		}
	}
	if *asJSON {
		return writeJSON(stdout, r)
	}
	bench.WriteSDETTable(stdout, r)
	return exitOK
}

func writeSDETSVG(path string, r *bench.SDETResult) error {
	xs := make([]float64, len(r.Points))
	base := bench.Series{Name: "goroutines + os/exec"}
	ns := bench.Series{Name: "numasteal processes"}
	for i, p := range r.Points {
		xs[i] = float64(p.N)
		base.Y = append(base.Y, p.BaselinePerHour)
		base.Err = append(base.Err, p.BaselineStdPerHour)
		ns.Y = append(ns.Y, p.NumastealPerHour)
		ns.Err = append(ns.Err, p.NumastealStdPerHour)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing chart: %w", err)
	}
	title := fmt.Sprintf("SDET throughput, %d CPUs, %gs per point, %d reps", r.Workers, r.DurationS, r.Reps)
	if err := bench.LineChartSVG(f, title, "concurrent scripts (N)", "scripts per hour", xs, []bench.Series{base, ns}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
