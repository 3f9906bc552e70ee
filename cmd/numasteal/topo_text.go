package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
	"github.com/numasteal/numasteal/topology/domains"
)

// writeTopoText prints the human form of "numasteal topo": a summary, the
// tree, the node table of numactl --hardware, and with showDomains the
// domain levels; then the notes of discovery and of the domain builder.
func writeTopoText(w io.Writer, t *topology.Topology, d *domains.Domains, showDomains bool) error {
	lw := &lineWriter{w: w}
	writeSummary(lw, t)
	lw.line("")
	if lw.err == nil {
		lw.err = writeTree(w, t)
	}
	lw.line("")
	writeNUMA(lw, t)
	if showDomains {
		lw.line("")
		writeDomains(lw, d)
	}
	if notes := append(append([]string{}, t.Notes...), d.Notes...); len(notes) > 0 {
		lw.line("")
		lw.line("notes:")
		for _, n := range notes {
			lw.line("  " + n)
		}
	}
	return lw.err
}

// writeSummary prints where the topology comes from and what is usable.
func writeSummary(w *lineWriter, t *topology.Topology) {
	src := t.Root
	if t.Live {
		src = "live machine"
	}
	arch := t.Arch
	if arch == "" {
		arch = "unknown architecture"
	}
	w.printf("source: %s (%s)\n", src, arch)
	if ci := t.CPUInfo; ci.Vendor != "" || ci.Model != "" {
		w.printf("cpu: %s\n", strings.TrimSpace(ci.Vendor+" "+ci.Model))
	}
	w.printf("usable cpus: %s (%d of %d online)\n", t.Usable, t.Usable.Len(), t.Online.Len())
	par := fmt.Sprintf("effective parallelism: %d", t.EffectiveParallelism())
	if q := t.Quota; q != nil && q.PeriodMicros > 0 {
		par += fmt.Sprintf(" (cgroup quota %d/%d us = %.2f CPUs, %s)", q.QuotaMicros, q.PeriodMicros, q.Parallelism(), q.File)
	}
	w.line(par)
}

// writeNUMA prints the node table the way numactl --hardware does, without
// the free-memory lines: usable CPUs and MemTotal per node, then the
// distance table.
func writeNUMA(w *lineWriter, t *topology.Topology) {
	var ids cpuset.Set
	for _, n := range t.Nodes {
		ids.Add(n.ID)
	}
	w.printf("available: %d nodes (%s)\n", len(t.Nodes), ids)
	for _, n := range t.Nodes {
		w.printf("node %d cpus:%s\n", n.ID, spaced(n.Usable))
		w.printf("node %d size: %d MB\n", n.ID, n.MemoryBytes>>20)
	}
	if t.Distances == nil {
		w.line("No distance information available.")
		return
	}
	w.line("node distances:")
	var b strings.Builder
	b.WriteString("node ")
	for _, id := range t.Distances.Nodes {
		fmt.Fprintf(&b, "%3d ", id)
	}
	w.line(strings.TrimRight(b.String(), " "))
	for i, id := range t.Distances.Nodes {
		b.Reset()
		fmt.Fprintf(&b, "%3d: ", id)
		for _, dist := range t.Distances.Matrix[i] {
			fmt.Fprintf(&b, "%3d ", dist)
		}
		w.line(strings.TrimRight(b.String(), " "))
	}
}

// spaced lists s as " 0 1 2", numactl's way.
func spaced(s cpuset.Set) string {
	var b strings.Builder
	for id := range s.All() {
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(id))
	}
	return b.String()
}

// writeDomains prints the domain levels, innermost first, with their spans
// and parameters.
func writeDomains(w *lineWriter, d *domains.Domains) {
	w.line("scheduling domains (innermost first):")
	if len(d.Levels) == 0 {
		w.line("  none: a single usable CPU has nothing to balance")
		return
	}
	for _, l := range d.Levels {
		name := string(l.Name)
		if l.Name == domains.NUMA {
			name += " distance " + strconv.Itoa(l.Distance)
		}
		p := l.Params
		w.printf("  %d %s: %d span(s)\n", l.Depth, name, len(l.Spans))
		var spans []string
		for _, s := range l.Spans {
			spans = append(spans, "{"+s.String()+"}")
		}
		w.printf("      spans: %s\n", strings.Join(spans, " "))
		w.printf("      imbalance_pct %d, interval %d..%d ms, busy_factor %d, cache_nice_tries %d, imb_numa_nr %d\n",
			p.ImbalancePct, p.MinIntervalMs, p.MaxIntervalMs, p.BusyFactor, p.CacheNiceTries, p.ImbNUMANr)
		w.printf("      flags: %s\n", p.Flags)
	}
}
