package buildgraph

// readyq is a 4-ary max-heap of tasks by scheduling order: higher priority
// first, and among equals the task earlier in the graph. The Scheduler
// keeps one per pool for its ready tasks and one for its running tasks
// (scheduler.go); push and removeAt cost O(log n). Four children a node
// (k's are 4k+1 to 4k+4, 64 bytes side by side) halve the depth of a
// binary heap, and so the cache misses of a sift in a heap of a million
// tasks.
type readyq []qent

// qarity is the number of children of a readyq node.
const qarity = 4

// qent is a task in a readyq: its index in the graph and its priority,
// copied so that sifting reads no other array.
type qent struct {
	prio int64
	i    int32
}

// before reports whether a goes before b in scheduling order.
func (a qent) before(b qent) bool {
	return a.prio > b.prio || (a.prio == b.prio && a.i < b.i)
}

func (q *readyq) push(e qent) {
	*q = append(*q, e)
	q.up(len(*q) - 1)
}

// removeAt removes and returns the entry at position k.
func (q *readyq) removeAt(k int) qent {
	h := *q
	e := h[k]
	last := len(h) - 1
	h[k] = h[last]
	*q = h[:last]
	if k < last {
		if !q.down(k) {
			q.up(k)
		}
	}
	return e
}

func (q readyq) up(k int) {
	e := q[k]
	for k > 0 {
		p := (k - 1) / qarity
		if !e.before(q[p]) {
			break
		}
		q[k] = q[p]
		k = p
	}
	q[k] = e
}

// down sifts the entry at k towards the leaves and reports whether it
// moved.
func (q readyq) down(k int) bool {
	e, k0, n := q[k], k, len(q)
	for {
		c := qarity*k + 1
		if c >= n {
			break
		}
		for r, end := c+1, min(c+qarity, n); r < end; r++ {
			if q[r].before(q[c]) {
				c = r
			}
		}
		if !q[c].before(e) {
			break
		}
		q[k] = q[c]
		k = c
	}
	q[k] = e
	return k != k0
}

// first returns the position of the entry that goes first among those for
// which fits is true, and that goes before bound when hasBound; ok is
// false when there is none. It is a best-first walk of the heap with
// scratch (returned for reuse) as its frontier, so it reads only the
// entries that go before the answer and their children: O(1) when the top
// fits, which is the case unless resources are short.
func (q readyq) first(fits func(i int32) bool, bound qent, hasBound bool, scratch []int32) (k int, ok bool, _ []int32) {
	if len(q) == 0 || (hasBound && !q[0].before(bound)) {
		return 0, false, scratch
	}
	if fits(q[0].i) {
		return 0, true, scratch
	}
	// frontier is a heap of positions in q, ordered as their entries.
	frontier := scratch[:0]
	less := func(a, b int32) bool { return q[a].before(q[b]) }
	pushPos := func(p int) {
		if p >= len(q) || (hasBound && !q[p].before(bound)) {
			return
		}
		frontier = append(frontier, int32(p))
		for j := len(frontier) - 1; j > 0; {
			pj := (j - 1) / 2
			if !less(frontier[j], frontier[pj]) {
				break
			}
			frontier[j], frontier[pj] = frontier[pj], frontier[j]
			j = pj
		}
	}
	popPos := func() int {
		p := frontier[0]
		last := len(frontier) - 1
		frontier[0] = frontier[last]
		frontier = frontier[:last]
		for j := 0; ; {
			c := 2*j + 1
			if c >= last {
				break
			}
			if r := c + 1; r < last && less(frontier[r], frontier[c]) {
				c = r
			}
			if !less(frontier[c], frontier[j]) {
				break
			}
			frontier[j], frontier[c] = frontier[c], frontier[j]
			j = c
		}
		return int(p)
	}
	for c := 1; c <= qarity; c++ {
		pushPos(c)
	}
	for len(frontier) > 0 {
		p := popPos()
		if fits(q[p].i) {
			return p, true, frontier
		}
		for c := qarity*p + 1; c <= qarity*p+qarity; c++ {
			pushPos(c)
		}
	}
	return 0, false, frontier
}
