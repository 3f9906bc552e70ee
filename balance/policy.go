package balance

import (
	"fmt"

	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/cpuset"
	"github.com/numasteal/numasteal/topology/domains"
)

// Load is what a policy sees of the machine. The runtime answers from its
// workers' queues, the simulator from its model. Answers may be stale; a
// policy uses them as hints and the caller re-checks when it steals.
// Methods are called by the deciding goroutine only and must not block.
type Load interface {
	// Queued returns the number of tasks waiting on cpu, not counting the
	// one it runs.
	Queued(cpu int) int
	// Running reports whether cpu is running a task.
	Running(cpu int) bool
}

// PlaceKind says why a task is being placed, choosing the domain flag the
// placement walk needs (SD_BALANCE_FORK or SD_BALANCE_EXEC).
type PlaceKind uint8

// The kinds of placement.
const (
	// PlaceFork places a task injected into the runtime (a fork).
	PlaceFork PlaceKind = iota
	// PlaceExec places a new process (an exec: the cheapest time to move).
	PlaceExec
)

// String returns "fork" or "exec".
func (k PlaceKind) String() string {
	if k == PlaceExec {
		return "exec"
	}
	return "fork"
}

// Mode says why a CPU balances.
type Mode uint8

// The balancing modes, after Linux's cpu_idle_type.
const (
	// NewlyIdle: the CPU just ran out of work (CPU_NEWLY_IDLE).
	NewlyIdle Mode = iota
	// Idle: periodic balancing of an idle CPU (CPU_IDLE).
	Idle
	// Busy: periodic balancing of a CPU that runs a task (CPU_NOT_IDLE);
	// balance intervals stretch by busy_factor.
	Busy
)

// Search describes one balancing pass of a CPU.
type Search struct {
	Mode Mode
	// Now is a monotonic clock in nanoseconds, for the balance intervals.
	Now int64
	// Final marks the last pass before the CPU sleeps: the policy drops
	// its gates (intervals, should_we_balance, imbalance threshold) but
	// keeps its reach, so that visible work is never left behind by a
	// worker about to park.
	Final bool
}

// Victim is one CPU to try stealing from.
type Victim struct {
	CPU int
	// Level is the depth (domains.Level.Depth) of the innermost domain of
	// the thief that contains the victim, for per-level statistics.
	Level int
	// Max is the most tasks to take in one steal (at least 1): the
	// caller takes up to half of the victim's queue, at most Max.
	Max int
}

// Thief is one CPU's balancing state. It is owned by that CPU's worker:
// not safe for concurrent use.
//
// A pass runs the steps in order, nearest first, and stops at the first
// step that yields work:
//
//	for step := range th.Steps() {
//		for _, v := range th.Victims(buf[:0], step, load, s) { try v }
//		th.Done(step, taken, s)
//	}
type Thief interface {
	// Steps returns the number of steps of a pass (domain levels, for
	// Hierarchical).
	Steps() int
	// Victims appends to buf the victims of step, best first, and returns
	// it. It never appends more than MaxVictims entries, so a caller that
	// preallocates that many never allocates.
	Victims(buf []Victim, step int, load Load, s Search) []Victim
	// Done reports how many tasks the step took (0: none), so the policy
	// can adapt its intervals and failure counts.
	Done(step, taken int, s Search)
	// MayMigrate reports whether periodic balancing at step may move a
	// task that last ran ranAgo nanoseconds ago (cache-hot hysteresis);
	// ranAgo < 0 means the task never ran.
	MayMigrate(step int, ranAgo int64) bool
}

// Balancer is a policy bound to a machine.
type Balancer interface {
	// Place returns the CPU a new task submitted near from should run on;
	// from may be -1 (unknown). Safe for concurrent use.
	Place(from int, kind PlaceKind, load Load) int
	// Thief returns cpu's balancing state, nil when cpu is not bound.
	Thief(cpu int) Thief
	// MaxVictims bounds the length of a step's victim list.
	MaxVictims() int
}

// Policy is a balancing policy: a name and a way to bind it to a machine.
type Policy interface {
	// Name returns the policy's name, as ByName accepts it.
	Name() string
	// Bind prepares the policy for the CPUs cpus (which must be covered
	// by doms) of topo. seed makes random choices reproducible.
	Bind(topo *topology.Topology, doms *domains.Domains, cpus cpuset.Set, seed uint64) (Balancer, error)
}

// Names lists the policies ByName knows, default first.
func Names() []string { return []string{"hierarchical", "flat", "local"} }

// ByName returns the policy called name with its default settings; "" is
// the default, Hierarchical.
func ByName(name string) (Policy, error) {
	switch name {
	case "", "hierarchical":
		return NewHierarchical(HierarchicalConfig{}), nil
	case "flat":
		return Flat{}, nil
	case "local":
		return Local{}, nil
	}
	return nil, fmt.Errorf("balance: unknown policy %q (known: hierarchical, flat, local)", name)
}

// Default returns the default policy, Hierarchical with default settings.
func Default() Policy { return NewHierarchical(HierarchicalConfig{}) }
