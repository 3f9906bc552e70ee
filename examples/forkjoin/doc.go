// Command forkjoin sorts 10 million integers with a parallel merge sort on
// the numasteal runtime and compares it with slices.Sort.
//
// The sort is the textbook fork-join one (Cilk's cilksort): split the slice
// in halves, sort them in parallel with Ctx.Join, then merge them with a
// parallel merge that splits the longer run at its median and the shorter
// one at the same value (binary search) and merges the two pairs in
// parallel. The two buffers swap roles at each level, so no level copies
// back. Below a grain (64Ki elements by default) the work goes to
// slices.Sort and a sequential merge: a task per element would cost more
// than the comparisons it saves.
//
// Usage:
//
//	go run ./examples/forkjoin [-n 10000000] [-reps 5] [-grain 65536]
package main
