// Command treesum sums a balanced binary tree of 10 million nodes with a
// fork per node on the numasteal runtime (runtime.Jobs) and compares it
// with the serial recursion: Spice's benchmark (judofyr/spice), the worst
// case for eager fork-join, since each node's work is one add. A fork
// that no thief could use runs as a plain call (runtime/promote.go).
//
// Usage:
//
//	go run ./examples/treesum [-n 10000000] [-reps 5] [-workers 0]
package main
