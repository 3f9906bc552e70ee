package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// The tree "numasteal topo" prints, in the manner of lstopo-no-graphics
// (hwloc 2.x): Machine, then Package, Die, Group0 (a NUMA node no other
// object spans), caches from the outermost level in, Core and PU, each object under the smallest one holding its usable
// CPUs; NUMA nodes hang as memory children on the smallest object holding
// their CPUs (the outermost of equals, like hwloc), CPU-less ones on the
// Machine. An object with a single child and no memory is printed on its
// child's line, joined by " + ". L# are logical indexes in tree order, P#
// the kernel's ids.

// treeObj is one object of the tree.
type treeObj struct {
	kind     string // "Machine", "Package", "L3", "Core", "PU", ...
	rank     int    // depth order among objects with the same CPUs
	cpus     cpuset.Set
	attr     func(logical int) string // the text after the kind
	children []*treeObj
	memory   []*treeObj // NUMA nodes
}

// Ranks of the object kinds, outermost first; caches get rankCache plus an
// offset that puts higher levels outside lower ones and, on one level, data
// and unified caches outside instruction caches.
const (
	rankMachine = 0
	rankPackage = 1
	rankDie     = 2
	rankGroup   = 3
	rankCache   = 10
	rankCore    = 100
	rankPU      = 101
)

// writeTree prints t's tree.
func writeTree(w io.Writer, t *topology.Topology) error {
	root := buildTree(t)
	lw := &lineWriter{w: w}
	counters := map[string]int{}
	printObj(lw, root, 0, counters)
	return lw.err
}

// buildTree assembles the objects of t's usable CPUs into a tree.
func buildTree(t *topology.Topology) *treeObj {
	var total int64
	for _, n := range t.Nodes {
		total += n.MemoryBytes
	}
	root := &treeObj{kind: "Machine", rank: rankMachine, cpus: t.Usable, attr: func(int) string {
		if total == 0 {
			return ""
		}
		return " (" + hwlocSize(total) + " total)"
	}}
	var objs []*treeObj
	add := func(kind string, rank int, cpus cpuset.Set, attr func(int) string) {
		if cpus = cpus.Intersect(t.Usable); !cpus.IsEmpty() {
			objs = append(objs, &treeObj{kind: kind, rank: rank, cpus: cpus, attr: attr})
		}
	}
	logical := func(l int) string { return fmt.Sprintf(" L#%d", l) }
	for _, p := range t.Packages {
		add("Package", rankPackage, p.CPUs, logical)
	}
	// Dies only when some die is not a whole package.
	if slices.ContainsFunc(t.Dies, func(d topology.Group) bool {
		return !slices.ContainsFunc(t.Packages, func(p topology.Group) bool { return p.CPUs.Equal(d.CPUs) })
	}) {
		for _, d := range t.Dies {
			add("Die", rankDie, d.CPUs, logical)
		}
	}
	for _, c := range t.Caches {
		kind := fmt.Sprintf("L%d", c.Level)
		rank := rankCache + (10-c.Level)*3
		switch c.Type {
		case topology.Data:
			kind += "d"
			rank++
		case topology.Instruction:
			kind += "i"
			rank += 2
		}
		size := c.SizeBytes
		add(kind, rank, c.CPUs, func(l int) string {
			if size <= 0 {
				return logical(l)
			}
			return logical(l) + " (" + hwlocSize(size) + ")"
		})
	}
	for _, c := range t.Cores {
		add("Core", rankCore, c.CPUs, logical)
	}
	for id := range t.Usable.All() {
		add("PU", rankPU, cpuset.Of(id), func(l int) string { return fmt.Sprintf(" L#%d (P#%d)", l, id) })
	}
	// A node whose CPUs no object spans gets a Group object to hang on, as
	// hwloc adds Group0 for a node of several packages.
	for _, n := range t.Nodes {
		cpus := n.Usable.Intersect(t.Usable)
		if cpus.IsEmpty() || cpus.Equal(t.Usable) || slices.ContainsFunc(objs, func(o *treeObj) bool { return o.cpus.Equal(cpus) }) {
			continue
		}
		add("Group0", rankGroup, cpus, logical)
	}

	// Outer objects first: larger sets, then lower ranks, then lower CPUs.
	// Every possible parent of an object then comes before it, and the last
	// one that holds it is the smallest.
	slices.SortStableFunc(objs, func(a, b *treeObj) int {
		if c := b.cpus.Len() - a.cpus.Len(); c != 0 {
			return c
		}
		if c := a.rank - b.rank; c != 0 {
			return c
		}
		return a.cpus.First() - b.cpus.First()
	})
	placed := []*treeObj{root}
	for _, o := range objs {
		parent := root
		for i := len(placed) - 1; i > 0; i-- {
			if o.cpus.IsSubsetOf(placed[i].cpus) {
				parent = placed[i]
				break
			}
		}
		parent.children = append(parent.children, o)
		placed = append(placed, o)
	}
	for _, p := range placed {
		slices.SortStableFunc(p.children, func(a, b *treeObj) int { return a.cpus.First() - b.cpus.First() })
	}

	var placedNodes []int
	for _, n := range t.Nodes {
		cpus := n.Usable
		holder := root
		if !cpus.IsEmpty() {
			// The smallest holder; of equals, the outermost (first
			// placed) other than the Machine, as hwloc does.
			for _, p := range placed[1:] {
				if cpus.IsSubsetOf(p.cpus) && (p.cpus.Len() < holder.cpus.Len() || holder == root) {
					holder = p
				}
			}
		}
		// NUMA nodes are numbered in id order, not tree order, so that a
		// CPU-less node on the Machine does not take L#0.
		id, mem, logical := n.ID, n.MemoryBytes, len(placedNodes)
		placedNodes = append(placedNodes, id)
		holder.memory = append(holder.memory, &treeObj{kind: "NUMANode", cpus: cpus, attr: func(int) string {
			return fmt.Sprintf(" L#%d (P#%d %s)", logical, id, hwlocSize(mem))
		}})
	}
	return root
}

// printObj prints o at depth, collapsing single-child chains onto one line.
func printObj(w *lineWriter, o *treeObj, depth int, counters map[string]int) {
	var line strings.Builder
	line.WriteString(strings.Repeat("  ", depth))
	for {
		line.WriteString(o.kind + o.attr(counters[o.kind]))
		counters[o.kind]++
		if o.kind == "Machine" || len(o.children) != 1 || len(o.memory) > 0 {
			break
		}
		line.WriteString(" + ")
		o = o.children[0]
	}
	w.line(line.String())
	for _, m := range o.memory {
		w.line(strings.Repeat("  ", depth+1) + m.kind + m.attr(counters[m.kind]))
		counters[m.kind]++
	}
	for _, c := range o.children {
		printObj(w, c, depth+1, counters)
	}
}

// hwlocSize formats a size as lstopo does without -v
// (hwloc_memory_size_printf_value): KB below 10 MiB, MB below 10 GiB, GB
// below 10 TiB, else TB; the units are binary.
func hwlocSize(bytes int64) string {
	switch {
	case bytes < 10<<20:
		return fmt.Sprintf("%dKB", bytes>>10)
	case bytes < 10<<30:
		return fmt.Sprintf("%dMB", bytes>>20)
	case bytes < 10<<40:
		return fmt.Sprintf("%dGB", bytes>>30)
	}
	return fmt.Sprintf("%dTB", bytes>>40)
}

// lineWriter writes lines and keeps the first error.
type lineWriter struct {
	w   io.Writer
	err error
}

func (l *lineWriter) line(s string) {
	if l.err == nil {
		_, l.err = io.WriteString(l.w, s+"\n")
	}
}

func (l *lineWriter) printf(format string, args ...any) {
	if l.err == nil {
		_, l.err = fmt.Fprintf(l.w, format, args...)
	}
}
