package runtime

import (
	"time"

	"go.uber.org/zap"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// Config says where the workers run and how the runtime behaves. The zero
// Config is valid: one pinned worker per usable CPU of the live machine.
type Config struct {
	// Topology is the machine to run on; nil means topology.Discover().
	Topology *topology.Topology
	// CPUs restricts the workers to these CPUs (∩ the topology's usable
	// CPUs); empty means all usable CPUs.
	CPUs cpuset.Set
	// Nodes restricts the workers to the CPUs of these NUMA nodes; empty
	// means all nodes.
	Nodes cpuset.Set
	// Workers, when positive, caps the number of workers. The chosen CPUs
	// are spread over the nodes round-robin so a cap still covers every node.
	Workers int
	// NoPin leaves the worker threads unpinned. It is implied when the
	// topology is not the live machine (a dump read with WithRoot): the
	// workers then stand for the dump's CPUs without running on them.
	NoPin bool
	// LocalMemory sets each worker thread's NUMA memory policy to
	// MPOL_LOCAL, so memory it first touches comes from its own node.
	LocalMemory bool
	// Policy is the balancing policy: whom idle workers steal from, how
	// much, and where injected tasks land (Runtime.Place). Nil means
	// balance.Default() (Hierarchical); balance.ByName selects one by name.
	Policy balance.Policy
	// BalanceTick is how often at most a worker runs periodic balancing
	// (balance.Busy: pulling queued tasks from a busier group when it
	// starts a task with nothing else queued; see periodic.go); 0 means
	// 200µs, negative disables periodic balancing. The policy's per-level
	// intervals apply on top of it.
	BalanceTick time.Duration
	// CloseMode says what Close does with tasks not yet started.
	CloseMode CloseMode
	// Logger receives start, stop and (with StatsInterval) periodic
	// statistics; nil means zap.NewNop(). Nothing logs on the hot path.
	Logger *zap.Logger
	// StatsInterval, when positive, logs Stats at Info level that often.
	StatsInterval time.Duration

	// foldEvery is how many tasks a worker runs between folds of its
	// counters into the shared totals (counters.go); 0 means
	// defaultFoldEvery. Tests set it to fold often or never.
	foldEvery int
	// promoteBackoff bounds promote's back-off (promote.go); 0 means
	// maxPromoteBackoff, negative turns the back-off off. New replaces
	// it with the bound in effect (0 for off). Benchmarks set it to
	// compare the two in one run.
	promoteBackoff int
}

// CloseMode says what Close does with queued tasks.
type CloseMode uint8

const (
	// Drain runs every task already submitted before the workers stop.
	Drain CloseMode = iota
	// Cancel reports every task not yet started as canceled
	// (context.Canceled) and cancels the contexts of running ones.
	Cancel
)
