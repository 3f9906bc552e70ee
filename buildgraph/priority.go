package buildgraph

// Critical-path priorities.
//
// A task's priority is the length of the longest chain of work that starts
// with it: its own weight plus the largest priority among the tasks that
// depend on it. Among ready tasks the Scheduler starts the one with the
// highest priority first, because the build cannot finish sooner than that
// chain, however many CPUs there are (Graham's list scheduling with the
// "highest level first" rule; ninja 1.12 does the same).
//
// Weights are milliseconds from a History when it knows the task. A task it
// does not know weighs the mean of the known ones in this graph, so that a
// new file neither jumps ahead of everything nor falls behind; with no
// history at all every task weighs 1 and the priority is the number of
// tasks on the longest chain. Weights are at least 1, so a chain of
// near-instant tasks still outranks a single one.

// weights returns each task's weight, as described above, and whether they
// are milliseconds (some task had a history) rather than 1 each.
func weights(g *Graph, h *History) (w []int64, timed bool) {
	w = make([]int64, len(g.Tasks))
	if h.Len() == 0 {
		for i := range w {
			w[i] = 1
		}
		return w, false
	}
	var sum, known int64
	have := make([]bool, len(g.Tasks))
	for i, t := range g.Tasks {
		if d, ok := h.Estimate(t); ok {
			w[i] = max(d.Milliseconds(), 1)
			have[i] = true
			sum += w[i]
			known++
		}
	}
	def := int64(1)
	if known > 0 {
		def = max(sum/known, 1)
	}
	for i := range w {
		if !have[i] {
			w[i] = def
		}
	}
	return w, known > 0
}

// priorities computes critical-path priorities for an acyclic graph given
// each task's dependencies and its dependents (those of i are
// on[off[i]:off[i+1]], as dependentsOf packs them). It walks the tasks in
// reverse topological order (Kahn's algorithm on the dependents edges), so
// it is linear in the size of the graph.
func priorities(w []int64, deps [][]int, off, on []int32) []int64 {
	n := len(w)
	prio := make([]int64, n)
	// pending[i] counts dependents of i whose priority is not known yet.
	pending := make([]int32, n)
	queue := make([]int32, 0, n)
	for i := range n {
		pending[i] = off[i+1] - off[i]
		if pending[i] == 0 {
			queue = append(queue, int32(i))
		}
	}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		var best int64
		for _, d := range on[off[i]:off[i+1]] {
			best = max(best, prio[d])
		}
		prio[i] = w[i] + best
		for _, p := range deps[i] {
			if pending[p]--; pending[p] == 0 {
				queue = append(queue, int32(p))
			}
		}
	}
	return prio
}
