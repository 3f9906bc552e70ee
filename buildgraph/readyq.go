package buildgraph

// readyq is a 4-ary max-heap of tasks by priority, and among equals by
// position. The Scheduler keeps its running tasks in one, whose top is the
// longest chain of work in progress (scheduler.go); push and removeAt cost
// O(log n). Four children a node (k's are 4k+1 to 4k+4) halve the depth of
// a binary heap.
type readyq []qent

// qarity is the number of children of a readyq node.
const qarity = 4

// qent is a task in a readyq: its position in the schedule and its
// priority, copied so that sifting reads no other array.
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
