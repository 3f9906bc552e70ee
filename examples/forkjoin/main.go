package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/numasteal/numasteal/examples/forkjoin/msort"
	"github.com/numasteal/numasteal/runtime"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "forkjoin:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("forkjoin", flag.ContinueOnError)
	n := fs.Int("n", 10_000_000, "number of integers to sort")
	reps := fs.Int("reps", 5, "rounds, alternating the two sorts")
	grain := fs.Int("grain", msort.DefaultGrain, "run length handed to slices.Sort")
	workers := fs.Int("workers", 0, "number of workers (0: one per usable CPU)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 0 || *reps < 1 {
		return fmt.Errorf("-n %d, -reps %d: need n >= 0 and reps >= 1", *n, *reps)
	}
	rt, err := runtime.New(runtime.Config{Workers: *workers})
	if err != nil {
		return err
	}
	defer rt.Close()
	ctx := context.Background()

	input := msort.RandomInts(*n, 1)
	want := slices.Clone(input)
	got := make([]int, *n)
	var serial, parallel []time.Duration
	for range *reps {
		copy(want, input)
		start := time.Now()
		slices.Sort(want)
		serial = append(serial, time.Since(start))

		copy(got, input)
		start = time.Now()
		if err := msort.Sort(ctx, rt, got, *grain); err != nil {
			return err
		}
		parallel = append(parallel, time.Since(start))
		if !slices.Equal(got, want) {
			return fmt.Errorf("parallel sort of %d ints differs from slices.Sort", *n)
		}
	}
	s, p := median(serial), median(parallel)
	fmt.Printf("sorting %d ints, median of %d rounds, %d workers\n", *n, *reps, rt.Workers())
	fmt.Printf("  slices.Sort         %10v\n", s.Round(time.Microsecond))
	fmt.Printf("  numasteal mergesort %10v  (%.2fx)\n", p.Round(time.Microsecond), float64(s)/float64(p))
	return nil
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}
