// Package btree is the tree sum of examples/treesum (Spice's benchmark):
// a balanced binary tree summed by a serial recursion and by a Jobs
// recursion with a fork per node, importable so that numasteal bench
// forkjoin measures the same code.
package btree

import "github.com/numasteal/numasteal/runtime"

// Node is one node of a binary tree.
type Node struct {
	Left, Right *Node
	Val         int64
}

// New returns a balanced binary tree of n nodes (nil for n <= 0) whose
// values are 1..n, allocated in one slab in depth-first order.
func New(n int) *Node {
	if n <= 0 {
		return nil
	}
	nodes := make([]Node, n)
	next := 0
	var build func(size int) *Node
	build = func(size int) *Node {
		if size == 0 {
			return nil
		}
		nd := &nodes[next]
		next++
		nd.Val = int64(next)
		left := (size - 1) / 2
		nd.Left = build(left)
		nd.Right = build(size - 1 - left)
		return nd
	}
	return build(n)
}

// SumSerial returns the sum of the values of the tree at n.
func SumSerial(n *Node) int64 {
	if n == nil {
		return 0
	}
	return n.Val + SumSerial(n.Left) + SumSerial(n.Right)
}

// NewSum returns the tree sum as a runtime.Jobs on rt: a Join per node
// with two children, no allocation. Run it with Jobs.Run(ctx, root).
func NewSum(rt *runtime.Runtime) *runtime.Jobs[*Node, int64] {
	var sum *runtime.Jobs[*Node, int64]
	var body func(c *runtime.Ctx, n *Node) (int64, error)
	body = func(c *runtime.Ctx, n *Node) (int64, error) {
		switch {
		case n == nil:
			return 0, nil
		case n.Left != nil && n.Right != nil:
			a, b, err := sum.Join(c, n.Left, n.Right)
			return n.Val + a + b, err
		case n.Left != nil:
			a, err := body(c, n.Left)
			return n.Val + a, err
		default:
			b, err := body(c, n.Right)
			return n.Val + b, err
		}
	}
	sum = runtime.NewJobs(rt, body)
	return sum
}
