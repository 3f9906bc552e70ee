package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/numasteal/numasteal/runtime"
)

// A Group is used like errgroup.Group: Go starts tasks, Wait returns the
// first error, and the first error cancels the tasks that have not started.
func ExampleGroup() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	words := []string{"fork", "join", "steal", "park"}
	upper := make([]string, len(words))
	g := rt.Group(context.Background())
	for i, w := range words {
		g.Go(func(c *runtime.Ctx) error {
			upper[i] = strings.ToUpper(w) // each task writes its own element
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(upper)

	g = rt.Group(context.Background())
	for i, w := range []string{"ok", "", "ok"} {
		g.Go(func(c *runtime.Ctx) error {
			if w == "" {
				return fmt.Errorf("word %d is empty", i)
			}
			return nil
		})
	}
	fmt.Println(g.Wait())
	// Output:
	// [FORK JOIN STEAL PARK]
	// word 1 is empty
}

// Join forks two functions and waits for both: here a recursive sum that
// splits its slice in halves down to a grain of 1000 elements.
func ExampleCtx_Join() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	var sum func(c *runtime.Ctx, s []int) int
	sum = func(c *runtime.Ctx, s []int) int {
		if len(s) <= 1000 {
			n := 0
			for _, v := range s {
				n += v
			}
			return n
		}
		var a, b int
		mid := len(s) / 2
		c.Join(
			func(c *runtime.Ctx) error { a = sum(c, s[:mid]); return nil },
			func(c *runtime.Ctx) error { b = sum(c, s[mid:]); return nil },
		)
		return a + b
	}
	s := make([]int, 1_000_000)
	for i := range s {
		s[i] = i
	}
	var total int
	err = rt.Go(context.Background(), func(c *runtime.Ctx) error {
		total = sum(c, s)
		return nil
	}).Wait()
	fmt.Println(total, err)
	// Output: 499999500000 <nil>
}

// Jobs is Join without allocations, for a task per call of a recursive
// function: the argument and result travel in reused job objects.
func ExampleJobs() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	var fib *runtime.Jobs[int, int]
	fib = runtime.NewJobs(rt, func(c *runtime.Ctx, n int) (int, error) {
		if n < 2 {
			return n, nil
		}
		a, b, err := fib.Join(c, n-1, n-2)
		return a + b, err
	})
	r, err := fib.Run(context.Background(), 25)
	fmt.Println(r, err)
	// Output: 75025 <nil>
}

// A task's children go into a group of its own: Ctx.Go pushes each onto
// the worker's deque, where idle workers steal them, and Ctx.Wait runs
// tasks while it waits instead of blocking the worker.
func ExampleCtx_Group() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	lengths := make([]int, 3)
	err = rt.Go(context.Background(), func(c *runtime.Ctx) error {
		g := c.Group()
		for i, w := range []string{"fork", "join", "steal"} {
			c.Go(g, func(c *runtime.Ctx) error {
				lengths[i] = len(w)
				return nil
			})
		}
		return c.Wait(g)
	}).Wait()
	fmt.Println(lengths, err)
	// Output: [4 4 5] <nil>
}

// ParallelFor splits a range into chunks and runs them in parallel,
// forking with Join; the first error is returned. Grain 0 lets it size
// the chunks itself; a positive grain bounds them. From outside the
// workers, run it in a task.
func ExampleCtx_ParallelFor() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()

	squares := make([]int, 10_000)
	err = rt.Go(context.Background(), func(c *runtime.Ctx) error {
		return c.ParallelFor(0, len(squares), 0, func(c *runtime.Ctx, lo, hi int) error {
			for i := lo; i < hi; i++ {
				squares[i] = i * i
			}
			return nil
		})
	}).Wait()
	fmt.Println(squares[3], squares[9999], err)

	errOdd := errors.New("odd chunk")
	err = rt.Go(context.Background(), func(c *runtime.Ctx) error {
		return c.ParallelFor(0, 100, 10, func(c *runtime.Ctx, lo, hi int) error {
			if lo == 50 {
				return errOdd
			}
			return nil
		})
	}).Wait()
	fmt.Println(err)
	// Output:
	// 9 99980001 <nil>
	// odd chunk
}

// A Counter counts events in tasks with a plain increment of the running
// worker's own slot; Load returns the folded total, exact once the runtime
// is idle or closed.
func ExampleCounter() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		log.Fatal(err)
	}
	evens := rt.NewCounter()
	err = rt.Go(context.Background(), func(c *runtime.Ctx) error {
		return c.ParallelFor(0, 1000, 10, func(c *runtime.Ctx, lo, hi int) error {
			for i := lo; i < hi; i++ {
				if i%2 == 0 {
					evens.Inc(c)
				}
			}
			return nil
		})
	}).Wait()
	if err != nil {
		log.Fatal(err)
	}
	rt.Close() // every worker folds as it exits
	fmt.Println(evens.Load())
	// Output: 500
}
