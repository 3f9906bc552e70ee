package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/numasteal/numasteal/examples/treesum/btree"
	"github.com/numasteal/numasteal/runtime"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "treesum:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("treesum", flag.ContinueOnError)
	n := fs.Int("n", 10_000_000, "number of tree nodes")
	reps := fs.Int("reps", 5, "rounds, alternating the two sums")
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
	root := btree.New(*n)
	sum := btree.NewSum(rt)
	want := int64(*n) * int64(*n+1) / 2
	var serial, parallel []time.Duration
	for range *reps {
		start := time.Now()
		s := btree.SumSerial(root)
		serial = append(serial, time.Since(start))
		start = time.Now()
		p, err := sum.Run(context.Background(), root)
		parallel = append(parallel, time.Since(start))
		if err != nil {
			return err
		}
		if s != want || p != want {
			return fmt.Errorf("sums %d (serial) and %d (runtime), want %d", s, p, want)
		}
	}
	s, p := median(serial), median(parallel)
	fmt.Printf("summing a tree of %d nodes, median of %d rounds, %d workers\n", *n, *reps, rt.Workers())
	fmt.Printf("  serial recursion    %10v\n", s.Round(time.Microsecond))
	fmt.Printf("  numasteal Jobs      %10v  (%.2fx)\n", p.Round(time.Microsecond), float64(s)/float64(p))
	return nil
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}
