package topology

import (
	"cmp"
	"slices"
)

// maxFreqAdjustPct is hwloc's default HWLOC_CPUKINDS_MAXFREQ "adjust=10":
// among CPUs of the same base frequency, max frequencies within 10% of each
// other are Turbo Boost Max 3.0 "favoured core" noise, not different kinds
// of core, and are all lowered to the smallest.
const maxFreqAdjustPct = 10

// readKinds reads cpu_capacity, cpufreq/cpuinfo_max_freq and
// cpufreq/base_frequency of every online CPU and groups CPUs with equal
// values into Kinds, ordered by capacity, then max frequency, then base
// frequency: least capable first. This is how hwloc 2.9 builds CPU kinds
// from sysfs (nvidia-dgx-gb10: 5 kinds by capacity; Intel Lakefield: 2 by
// frequency). One kind means a homogeneous machine: Kinds stays nil.
func (d *discoverer) readKinds() error {
	t := d.t
	capacity := &alts{names: []string{"cpu_capacity"}, rememberAbsent: true}
	maxFreq := &alts{names: []string{"cpufreq/cpuinfo_max_freq"}, rememberAbsent: true}
	baseFreq := &alts{names: []string{"cpufreq/base_frequency"}, rememberAbsent: true}
	readInt := func(r *reader, cpu int, a *alts) (int, error) {
		if a.none {
			return 0, nil
		}
		v, ok, err := r.int(cpuPath(cpu, a.names[0]))
		if !ok && !a.tried {
			a.none = true
		}
		a.tried = true
		return max(v, 0), err
	}
	read := func(r *reader, i int, c, m, b *alts) error {
		cpu := &t.CPUs[i]
		var err error
		if cpu.Capacity, err = readInt(r, cpu.ID, c); err != nil {
			return err
		}
		if cpu.MaxFreqKHz, err = readInt(r, cpu.ID, m); err != nil {
			return err
		}
		cpu.BaseFreqKHz, err = readInt(r, cpu.ID, b)
		return err
	}
	// The first CPU tells which files exist at all; the others are read in
	// parallel with copies of what it learnt.
	if err := read(d.r, 0, capacity, maxFreq, baseFreq); err != nil {
		return err
	}
	if err := d.parallel(len(t.CPUs)-1, func(r *reader, i int) error {
		c, m, b := *capacity, *maxFreq, *baseFreq
		return read(r, i+1, &c, &m, &b)
	}); err != nil {
		return err
	}
	baseMissing := false
	for _, c := range t.CPUs {
		if c.MaxFreqKHz > 0 && c.BaseFreqKHz == 0 {
			baseMissing = true
		}
	}
	// The kind key of each CPU, with hwloc's max-frequency adjustment when
	// every CPU with a max frequency also has a base frequency.
	keys := make([]Kind, len(t.CPUs))
	for i, c := range t.CPUs {
		keys[i] = Kind{Capacity: c.Capacity, MaxFreqKHz: c.MaxFreqKHz, BaseFreqKHz: c.BaseFreqKHz}
	}
	if !baseMissing {
		adjustMaxFreqs(keys)
	}
	// CPUs that report nothing (2arm-2c: cpu1 has no cpufreq) are of an
	// unknown kind, not of a kind of their own: they only join a kind when
	// the others already make the machine hybrid.
	var kinds []Kind
	known := 0
	for i, k := range keys {
		j := slices.IndexFunc(kinds, func(o Kind) bool {
			return o.Capacity == k.Capacity && o.MaxFreqKHz == k.MaxFreqKHz && o.BaseFreqKHz == k.BaseFreqKHz
		})
		if j < 0 {
			kinds = append(kinds, k)
			j = len(kinds) - 1
			if k.Capacity != 0 || k.MaxFreqKHz != 0 || k.BaseFreqKHz != 0 {
				known++
			}
		}
		kinds[j].CPUs.Add(t.CPUs[i].ID)
	}
	if known < 2 {
		return nil
	}
	slices.SortFunc(kinds, func(a, b Kind) int {
		return cmp.Or(cmp.Compare(a.Capacity, b.Capacity), cmp.Compare(a.MaxFreqKHz, b.MaxFreqKHz),
			cmp.Compare(a.BaseFreqKHz, b.BaseFreqKHz), cmp.Compare(a.CPUs.First(), b.CPUs.First()))
	})
	for i := range kinds {
		kinds[i].Index = i
		for c := range kinds[i].CPUs.All() {
			if j, ok := t.cpuIndex(c); ok {
				t.CPUs[j].Kind = i
			}
		}
	}
	t.Kinds = kinds
	return nil
}

// adjustMaxFreqs applies hwloc's hwloc_linux_cpukinds_adjust_maxfreqs: in
// each group of CPUs sharing a base frequency, if the max frequencies
// spread by less than maxFreqAdjustPct percent of the smallest, every CPU
// of the group gets the smallest max frequency and smallest capacity.
func adjustMaxFreqs(keys []Kind) {
	done := make([]bool, len(keys))
	for i := range keys {
		if done[i] {
			continue
		}
		var group []int
		minMax, maxMax := keys[i].MaxFreqKHz, keys[i].MaxFreqKHz
		minCap := keys[i].Capacity
		for j := i; j < len(keys); j++ {
			if !done[j] && keys[j].BaseFreqKHz == keys[i].BaseFreqKHz {
				done[j] = true
				group = append(group, j)
				minMax, maxMax = min(minMax, keys[j].MaxFreqKHz), max(maxMax, keys[j].MaxFreqKHz)
				minCap = min(minCap, keys[j].Capacity)
			}
		}
		if minMax == maxMax || minMax <= 0 {
			continue
		}
		if (maxMax-minMax)*100 < maxFreqAdjustPct*minMax {
			for _, j := range group {
				keys[j].MaxFreqKHz, keys[j].Capacity = minMax, minCap
			}
		}
	}
}
