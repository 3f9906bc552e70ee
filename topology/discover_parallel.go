package topology

import (
	"runtime"
	"sync"
)

// Discovery is bound by system calls: a 256-CPU dump means some 1,250
// small files, each an open, a read and a close. The per-CPU and per-node
// reads that do not depend on each other are spread over a few goroutines,
// each with its own reader (and buffer) but sharing the open directories.
// Results go to a slot per index and errors are reported for the lowest
// failing index, so the outcome does not depend on scheduling.

// minPerWorker is the number of items each goroutine should have at least:
// an item is one to four files of a few microseconds each, a goroutine
// costs about one microsecond, so 16 items keep the overhead near 1%.
const minPerWorker = 16

// maxWorkers bounds the goroutines of one Discover: file system lookups
// scale with CPUs only so far before they contend on directory locks.
const maxWorkers = 8

// parallel calls fn(r, i) for every i in [0, n), on several goroutines when
// n is large enough. fn must only write state owned by index i.
func (d *discoverer) parallel(n int, fn func(r *reader, i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), maxWorkers, n/minPerWorker)
	if workers <= 1 {
		for i := range n {
			if err := fn(d.r, i); err != nil {
				return err
			}
		}
		return nil
	}
	d.r.openDirs()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range workers {
		r := d.r.fork()
		wg.Go(func() {
			// Interleaved indices keep the workers' shares even when the
			// cost varies along the range (offline CPUs, CPU-less nodes).
			for i := w; i < n; i += workers {
				errs[i] = fn(r, i)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
