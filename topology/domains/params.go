// Step 3 of Build: each domain's balancing parameters (sd_init) and
// imb_numa_nr (build_sched_domains).

package domains

import (
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// Parameters (sd_init in kernel/sched/topology.c unless said otherwise):
//
//	field            SMT   CLUSTER/LLC  DIE/PACKAGE/NODE  NUMA       where from
//	min_interval     w     w            w                 w          sd_init: .min_interval = sd_weight (ms), w = span weight
//	max_interval     2w    2w           2w                2w         sd_init: .max_interval = 2*sd_weight (ms)
//	busy_factor      16    16           16                16         sd_init: .busy_factor = 16 (32 before v5.10)
//	imbalance_pct    110   117          125               125        sd_init: SD_SHARE_CPUCAPACITY -> 110,
//	                                                                 SD_SHARE_LLC -> 117; 125 is the pre-v5.10
//	                                                                 default (see sdImbalanceAbove)
//	cache_nice_tries 0     1            1                 2          sd_init: SMT keeps the default 0, SD_SHARE_LLC
//	                                                                 -> 1, SD_NUMA -> 2, everything else -> 1
//	flags            base|SHARE_CPUCAPACITY|SHARE_LLC (cpu_smt_flags)
//	                       base|CLUSTER|SHARE_LLC (cpu_cluster_flags), base|SHARE_LLC (cpu_core_flags)
//	                                    base              base-PREFER_SIBLING|NUMA|SERIALIZE|OVERLAP,
//	                                                      and -EXEC-FORK-WAKE_AFFINE beyond node_reclaim_distance
//
// where base = BALANCE_NEWIDLE|BALANCE_EXEC|BALANCE_FORK|WAKE_AFFINE|
// PREFER_SIBLING (sd_init's initialiser; SD_BALANCE_WAKE stays 0), plus
// ASYM_CPUCAPACITY[_FULL] where the span holds CPUs of different capacity
// (asym_cpu_capacity_classify), which also takes PREFER_SIBLING off the
// child. MACHINE is treated as a NUMA level at an unknown (hence remote)
// distance when its span holds CPUs of more than one node, else like
// PACKAGE. imb_numa_nr follows build_sched_domains.
const (
	// sdBusyFactor is sd_init's .busy_factor: 16 since "sched/fair: Reduce
	// busy load balance interval" (v5.10), 32 before.
	sdBusyFactor = 16

	sdImbalanceSMT = 110 // sd_init: SD_SHARE_CPUCAPACITY
	sdImbalanceLLC = 117 // sd_init: SD_SHARE_LLC (CLS and MC)
	// sdImbalanceAbove is the imbalance_pct of every level above the LLC. It
	// is sd_init's default up to v5.9; "sched/fair: Reduce minimal
	// imbalance threshold" (Vincent Guittot, v5.10, lkml
	// 20200921072424.14813-3) lowered the default to 117 for PKG and NUMA
	// too. numasteal keeps 125 by design: a steal across packages or
	// nodes costs a user-space runtime more than a kernel migration, so it
	// waits for the larger imbalance. fair.c uses
	// the number in find_busiest_group (sched_balance_find_src_group since
	// v6.10: "100 * busiest->avg_load <= env->sd->imbalance_pct *
	// local->avg_load" means balanced), and halved, 100 + (pct-100)/2, in
	// find_idlest_group, wake_affine_weight and task_numa_migrate.
	sdImbalanceAbove = 125

	sdCacheNiceSMT   = 0 // sd_init's initialiser (.cache_nice_tries = 0)
	sdCacheNiceLLC   = 1 // sd_init: SD_SHARE_LLC
	sdCacheNiceNUMA  = 2 // sd_init: SD_NUMA
	sdCacheNiceOther = 1 // sd_init: the final else (PKG, NODE)

	// sdBaseFlags is sd_init's initialiser.
	sdBaseFlags = FlagBalanceNewIdle | FlagBalanceExec | FlagBalanceFork | FlagWakeAffine | FlagPreferSibling
)

// Params are one domain's balancing parameters, derived as Linux's sd_init
// derives them: the intervals from the span weight, imbalance_pct 110 at
// SMT, 117 at CLUSTER and LLC and 125 above, and the SD flags of the level.
// The constants in params.go name the source of every number.
type Params struct {
	ImbalancePct   int   // steal only if busiest > local * pct / 100
	MinIntervalMs  int   // min_interval = span weight (ms)
	MaxIntervalMs  int   // max_interval = 2 * span weight (ms)
	BusyFactor     int   // interval multiplier while the CPU is busy
	CacheNiceTries int   // failed balance attempts before cache-hot tasks move
	Flags          Flags // what balancing the domain allows
	// ImbNUMANr is the number of tasks a NUMA balance may leave imbalanced
	// (sched_domain.imb_numa_nr, set in build_sched_domains); 0 below the
	// first level above the LLC.
	ImbNUMANr int
}

// buildParams fills every raw domain's parameters (sd_init), then imb_numa_nr
// (build_sched_domains).
func (b *builder) buildParams() {
	for _, id := range b.ids {
		chain := b.raw[id]
		for ri := range chain {
			chain[ri].params = b.params(b.rungs[ri], chain[ri].span)
			// sd_init: "Don't attempt to spread across CPUs of different
			// capacities."
			if chain[ri].params.Flags&FlagAsymCapacity != 0 && ri > 0 {
				chain[ri-1].params.Flags &^= FlagPreferSibling
			}
		}
		setImbNUMANr(chain)
	}
}

// params derives one domain's parameters as sd_init does.
func (b *builder) params(r rung, span cpuset.Set) Params {
	w := span.Len()
	p := Params{
		MinIntervalMs: w,
		MaxIntervalMs: 2 * w,
		BusyFactor:    sdBusyFactor,
		ImbalancePct:  sdImbalanceAbove,
		Flags:         sdBaseFlags | b.asym(span),
	}
	distance := r.distance
	switch r.kind {
	case rungSMT:
		p.Flags |= FlagShareCPUCapacity | FlagShareLLC // cpu_smt_flags
	case rungCluster:
		p.Flags |= FlagCluster | FlagShareLLC // cpu_cluster_flags
	case rungLLC:
		p.Flags |= FlagShareLLC // cpu_core_flags
	case rungNUMA:
		p.Flags |= FlagNUMA | FlagOverlap // cpu_numa_flags, SDTL_OVERLAP
	case rungMachine:
		if b.crossesNodes(span) {
			p.Flags |= FlagNUMA
			distance = sdMaxDistance + 1 // unknown, so remote
		}
	}
	switch {
	case p.Flags&FlagShareCPUCapacity != 0:
		p.ImbalancePct = sdImbalanceSMT
		p.CacheNiceTries = sdCacheNiceSMT
	case p.Flags&FlagShareLLC != 0:
		p.ImbalancePct = sdImbalanceLLC
		p.CacheNiceTries = sdCacheNiceLLC
	case p.Flags&FlagNUMA != 0:
		p.CacheNiceTries = sdCacheNiceNUMA
		p.Flags &^= FlagPreferSibling
		p.Flags |= FlagSerialize
		if distance > b.reclaim {
			p.Flags &^= FlagBalanceExec | FlagBalanceFork | FlagWakeAffine
		}
	default:
		p.CacheNiceTries = sdCacheNiceOther
	}
	return p
}

// crossesNodes reports whether span holds CPUs of two nodes (the CPUs in no
// node counting as one more).
func (b *builder) crossesNodes(span cpuset.Set) bool {
	n := 0
	for _, cpus := range b.nodeCPUs {
		if cpus.Intersects(span) {
			n++
		}
	}
	return n > 1
}

// asymCapacityKey is what asym_cpu_capacity_classify compares:
// cpu_capacity when known, else the CPU kind on a hybrid machine, else 0 (all alike).
func asymCapacityKey(c *topology.CPU) int {
	switch {
	case c.Capacity > 0:
		return c.Capacity
	case c.Kind >= 0:
		return -1 - c.Kind
	}
	return 0
}

// asym classifies span's capacities as asym_cpu_capacity_classify does: two
// or more distinct capacities make it asymmetric, and fully so when every
// capacity among the usable CPUs is present.
func (b *builder) asym(span cpuset.Set) Flags {
	if len(b.capClasses) < 2 {
		return 0
	}
	count := 0
	for _, cpus := range b.capClasses {
		if cpus.Intersects(span) {
			count++
		}
	}
	switch {
	case count < 2:
		return 0
	case count < len(b.capClasses):
		return FlagAsymCapacity
	}
	return FlagAsymCapacity | FlagAsymCapacityFull
}

// setImbNUMANr sets imb_numa_nr along one CPU's chain, as build_sched_domains
// does: at the first level above the LLC it is the number of LLCs below (or
// an eighth of the span when there is one LLC), and above that it grows
// with the span relative to the first NUMA domain.
func setImbNUMANr(chain []rawDomain) {
	imb, imbSpan := 0, 1
	for i := range chain {
		sd := &chain[i]
		w := sd.span.Len()
		if i > 0 && sd.params.Flags&FlagShareLLC == 0 && chain[i-1].params.Flags&FlagShareLLC != 0 {
			nrLLCs := w / chain[i-1].span.Len()
			if nrLLCs == 1 {
				imb = w >> 3
			} else {
				imb = nrLLCs
			}
			imb = max(1, imb)
			sd.params.ImbNUMANr = imb
			imbSpan = w
			for j := i + 1; j < len(chain); j++ {
				if chain[j].params.Flags&FlagNUMA != 0 {
					imbSpan = chain[j].span.Len()
					break
				}
			}
		} else {
			sd.params.ImbNUMANr = imb * max(1, w/imbSpan)
		}
	}
}
