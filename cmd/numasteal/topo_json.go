package main

import (
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
	"github.com/numasteal/numasteal/topology/domains"
)

// topoReport is the document "numasteal topo --json" prints: the keys
// cpus, packages, cores, nodes, distances, caches and domains first (the
// ones scripts rely on; the tests check them, jsonKeys), then extras.
// Lists are never null; distances and quota are null when the machine has
// none. CPU lists hold usable CPUs only.
type topoReport struct {
	CPUs      []int          `json:"cpus"`
	Packages  int            `json:"packages"`
	Cores     int            `json:"cores"`
	Nodes     []nodeReport   `json:"nodes"`
	Distances *distReport    `json:"distances"`
	Caches    []cacheReport  `json:"caches"`
	Domains   []domainReport `json:"domains"`

	Root                 string       `json:"root"`
	Live                 bool         `json:"live"`
	Arch                 string       `json:"arch"`
	CPU                  cpuReport    `json:"cpu"`
	OnlineCPUs           []int        `json:"online_cpus"`
	EffectiveParallelism int          `json:"effective_parallelism"`
	Quota                *quotaReport `json:"quota"`
	Kinds                []kindReport `json:"kinds"`
	NUMADistances        []int        `json:"numa_distances"`
	Notes                []string     `json:"notes"`
}

// nodeReport is one NUMA node the process may use, CPU-less ones included.
type nodeReport struct {
	ID          int   `json:"id"`
	CPUs        []int `json:"cpus"`
	MemoryBytes int64 `json:"memory_bytes"`
}

// distReport is the node distance table: Matrix[i][j] is the distance from
// Nodes[i] to Nodes[j].
type distReport struct {
	Nodes  []int   `json:"nodes"`
	Matrix [][]int `json:"matrix"`
}

// cacheReport is one cache instance holding at least one usable CPU.
type cacheReport struct {
	Level     int    `json:"level"`
	Type      string `json:"type"`
	SizeBytes int64  `json:"size_bytes"`
	LineSize  int    `json:"line_size"`
	CPUs      []int  `json:"cpus"`
}

// domainReport is one scheduling-domain level, innermost first.
type domainReport struct {
	Name string `json:"name"`
	// Distance is set on NUMA levels only.
	Distance       *int     `json:"distance,omitempty"`
	Spans          [][]int  `json:"spans"`
	ImbalancePct   int      `json:"imbalance_pct"`
	MinIntervalMs  int      `json:"min_interval_ms"`
	MaxIntervalMs  int      `json:"max_interval_ms"`
	BusyFactor     int      `json:"busy_factor"`
	CacheNiceTries int      `json:"cache_nice_tries"`
	ImbNUMANr      int      `json:"imb_numa_nr"`
	Flags          []string `json:"flags"`
}

// cpuReport identifies the processor; empty strings and -1 are unknown.
type cpuReport struct {
	Vendor  string `json:"vendor"`
	Model   string `json:"model"`
	Family  int    `json:"family"`
	ModelID int    `json:"model_id"`
}

// quotaReport is the cgroup CPU bandwidth limit.
type quotaReport struct {
	QuotaMicros  int64   `json:"quota_us"`
	PeriodMicros int64   `json:"period_us"`
	CPUs         float64 `json:"cpus"`
	File         string  `json:"file"`
}

// kindReport is one CPU kind of a hybrid machine, least capable first.
type kindReport struct {
	Capacity   int   `json:"capacity"`
	MaxFreqKHz int   `json:"max_freq_khz"`
	CPUs       []int `json:"cpus"`
}

// newTopoReport fills the document from t and d.
func newTopoReport(t *topology.Topology, d *domains.Domains) *topoReport {
	r := &topoReport{
		CPUs:                 t.Usable.IDs(),
		Packages:             countUsable(t.Packages, t.Usable),
		Cores:                countUsable(t.Cores, t.Usable),
		Nodes:                []nodeReport{},
		Caches:               []cacheReport{},
		Domains:              []domainReport{},
		Root:                 t.Root,
		Live:                 t.Live,
		Arch:                 t.Arch,
		CPU:                  cpuReport{t.CPUInfo.Vendor, t.CPUInfo.Model, t.CPUInfo.Family, t.CPUInfo.ModelID},
		OnlineCPUs:           t.Online.IDs(),
		EffectiveParallelism: t.EffectiveParallelism(),
		Kinds:                []kindReport{},
		NUMADistances:        append([]int{}, d.NUMADistances...),
		Notes:                append(append([]string{}, t.Notes...), d.Notes...),
	}
	for _, n := range t.Nodes {
		r.Nodes = append(r.Nodes, nodeReport{ID: n.ID, CPUs: n.Usable.IDs(), MemoryBytes: n.MemoryBytes})
	}
	if t.Distances != nil {
		dr := &distReport{Nodes: append([]int{}, t.Distances.Nodes...), Matrix: [][]int{}}
		for _, row := range t.Distances.Matrix {
			dr.Matrix = append(dr.Matrix, append([]int{}, row...))
		}
		r.Distances = dr
	}
	for _, c := range t.Caches {
		cpus := c.CPUs.Intersect(t.Usable)
		if cpus.IsEmpty() {
			continue
		}
		r.Caches = append(r.Caches, cacheReport{
			Level: c.Level, Type: string(c.Type), SizeBytes: c.SizeBytes, LineSize: c.LineSize, CPUs: cpus.IDs(),
		})
	}
	for _, l := range d.Levels {
		p := l.Params
		dom := domainReport{
			Name:           string(l.Name),
			Spans:          l.SpanIDs(),
			ImbalancePct:   p.ImbalancePct,
			MinIntervalMs:  p.MinIntervalMs,
			MaxIntervalMs:  p.MaxIntervalMs,
			BusyFactor:     p.BusyFactor,
			CacheNiceTries: p.CacheNiceTries,
			ImbNUMANr:      p.ImbNUMANr,
			Flags:          p.Flags.Names(),
		}
		if l.Name == domains.NUMA {
			dist := l.Distance
			dom.Distance = &dist
		}
		r.Domains = append(r.Domains, dom)
	}
	if q := t.Quota; q != nil {
		r.Quota = &quotaReport{QuotaMicros: q.QuotaMicros, PeriodMicros: q.PeriodMicros, File: q.File}
		if q.PeriodMicros > 0 {
			r.Quota.CPUs = q.Parallelism()
		}
	}
	for _, k := range t.Kinds {
		r.Kinds = append(r.Kinds, kindReport{Capacity: k.Capacity, MaxFreqKHz: k.MaxFreqKHz, CPUs: k.CPUs.Intersect(t.Usable).IDs()})
	}
	return r
}

// countUsable counts the groups holding at least one usable CPU, the way
// hwloc counts the packages and cores it keeps.
func countUsable(groups []topology.Group, usable cpuset.Set) int {
	n := 0
	for _, g := range groups {
		if g.CPUs.Intersects(usable) {
			n++
		}
	}
	return n
}

// inlineScalarLists rewrites indented JSON so that every list holding no
// object or list is on one line ("cpus": [0,1,2]), which keeps the CPU
// lists of a 256-CPU machine readable. It only removes whitespace outside
// strings.
func inlineScalarLists(doc []byte) []byte {
	out := make([]byte, 0, len(doc))
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		if c == '"' {
			j := stringEnd(doc, i)
			out = append(out, doc[i:j]...)
			i = j - 1
			continue
		}
		if c != '[' {
			out = append(out, c)
			continue
		}
		// Find the matching ']' if no '[' or '{' comes first.
		end, flat := -1, true
		for j := i + 1; j < len(doc) && flat && end < 0; j++ {
			switch doc[j] {
			case '"':
				j = stringEnd(doc, j) - 1
			case '[', '{':
				flat = false
			case ']':
				end = j
			}
		}
		if !flat || end < 0 {
			out = append(out, c)
			continue
		}
		for j := i; j <= end; j++ {
			switch doc[j] {
			case '"':
				k := stringEnd(doc, j)
				out = append(out, doc[j:k]...)
				j = k - 1
			case ' ', '\n', '\t', '\r':
			default:
				out = append(out, doc[j])
			}
		}
		i = end
	}
	return out
}

// stringEnd returns the index just past the JSON string starting at doc[i].
func stringEnd(doc []byte, i int) int {
	for j := i + 1; j < len(doc); j++ {
		switch doc[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(doc)
}
