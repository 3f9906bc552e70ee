package supervise

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/numasteal/numasteal/topology"
)

// MarkerEnv is the environment variable every task's processes carry:
// NUMASTEAL_SUPERVISOR=RUNID.TASK (Task.ID). Children inherit it, so the
// processes of a task, escaped ones too, are found by scanning
// /proc/*/environ; see doc.go, "The marker".
const MarkerEnv = "NUMASTEAL_SUPERVISOR"

// watchdogEnv selects watchdog mode in a re-executed binary (MaybeWatchdog):
// "3" (the control pipe is fd 3) or "3,4" (and fd 4 takes tokens back).
const watchdogEnv = "NUMASTEAL_WATCHDOG"

// Options configure a Supervisor. The zero value is valid: cgroups where
// they work, no subreaper, no watchdog, one kept fork thread, 2 s grace.
type Options struct {
	// RunID names the run in markers and the run cgroup: 1 to 64 letters,
	// digits, '-' or '_'. "" means "PID-RANDOM".
	RunID string
	// Grace is how long a task's processes have between SIGTERM and
	// SIGKILL when it ends; 0 means 2 seconds.
	Grace time.Duration
	// NoCgroup disables the cgroup mechanism even where it would work, so
	// that the fallback (groups and markers alone) runs on any machine.
	NoCgroup bool
	// CgroupParent is the cgroup v2 directory under which the run's cgroup
	// is created; "" means this process's own cgroup.
	CgroupParent string
	// Subreaper makes this process a child subreaper
	// (PR_SET_CHILD_SUBREAPER) and starts the reaper. It changes the whole
	// process for good: every orphan of every child comes here, and the
	// reaper reaps each child of this process that a Supervisor did not
	// start. Set it only in a program that runs all its children through
	// Supervisors (numasteal run); doc.go, "The reaper". A process that is
	// a subreaper already gets the reaper without it.
	Subreaper bool
	// ForkThreads is how many kept OS threads start the tasks not placed
	// on one CPU; 0 means 1. A task placed on one CPU (and no memory
	// policy) is started by a kept thread pinned to that CPU, one per
	// CPU, made at the first such start.
	ForkThreads int
	// Watchdog, when not "", is the executable to re-execute as the
	// watchdog (normally os.Executable(); its main must call MaybeWatchdog
	// first). "" means no watchdog: a SIGKILLed supervisor then ends only
	// its direct children (Pdeathsig).
	Watchdog string
	// WatchdogTokens, when not nil, is a jobserver's write end, inherited
	// by the watchdog, which writes back the tokens SetTokens last reported
	// if the supervisor dies.
	WatchdogTokens *os.File
	// OOMScoreAdj, when above this process's own oom_score_adj (which
	// children inherit), is written as the oom_score_adj of each task's
	// first process right after it starts, so that the kernel's OOM
	// killer, when memory runs out, takes a task's process before this
	// one (raising needs no privilege). The child has begun its execve by
	// then; a process it starts before the write keeps the inherited
	// value. 0 to 1000; 0 leaves tasks as they are.
	OOMScoreAdj int
	// TaskMemoryLimit, when above 0, puts every task in a memory cgroup
	// that holds the run's tasks and nothing else, limited to this many
	// bytes (normally the limit of this process's own memory cgroups less
	// a margin for this process), so that when the tasks outgrow it the
	// kernel's OOM killer chooses among them alone, never this process
	// or another member of its cgroup; doc.go, "The tasks' memory".
	// In cgroup v2 this process may move to a leaf below its own cgroup
	// for the run. Where no such cgroup can be made the tasks run without
	// it, and Mechanisms says why.
	TaskMemoryLimit int64
	// Logger receives the mechanism report and warnings; nil means
	// zap.NewNop().
	Logger *zap.Logger
}

// Mechanisms says which mechanisms a Supervisor uses; doc.go says what
// each covers.
type Mechanisms struct {
	// Cgroup is the run's cgroup v2 directory, "" when tasks get none.
	Cgroup string
	// NoCgroupReason says why Cgroup is "" (Options.NoCgroup, no cgroup2
	// mount, no permission, kernel too old).
	NoCgroupReason string
	// Subreaper: this process is a child subreaper (Options.Subreaper,
	// or it already was one), so orphans come here, and the reaper reaps
	// them.
	Subreaper bool
	// Pdeathsig: direct children get SIGKILL when this process dies
	// (always on Linux, through the kept fork threads).
	Pdeathsig bool
	// Watchdog is the watchdog's pid, 0 without one.
	Watchdog int
	// TaskMemory is the memory cgroup that holds the tasks alone
	// (Options.TaskMemoryLimit): a v1 memory cgroup of the run's, or in
	// v2 the run's cgroup; its Dir is "" when tasks have none, and
	// NoTaskMemoryReason says why when one was asked for.
	TaskMemory         topology.MemoryCgroup
	NoTaskMemoryReason string
}

// String returns a one-line summary: "cgroup=DIR memcg=DIR subreaper
// pdeathsig watchdog=PID", with "cgroup=none(REASON)" when there is no
// cgroup, and "memcg=none(REASON)" when the tasks' memory cgroup asked
// for could not be made.
func (m Mechanisms) String() string {
	parts := []string{"pgroup", "marker"}
	if m.Cgroup != "" {
		parts = append(parts, "cgroup="+m.Cgroup)
	} else {
		parts = append(parts, "cgroup=none("+m.NoCgroupReason+")")
	}
	if m.TaskMemory.Dir != "" {
		parts = append(parts, "memcg="+m.TaskMemory.Dir)
	} else if m.NoTaskMemoryReason != "" {
		parts = append(parts, "memcg=none("+m.NoTaskMemoryReason+")")
	}
	if m.Subreaper {
		parts = append(parts, "subreaper")
	}
	if m.Pdeathsig {
		parts = append(parts, "pdeathsig")
	}
	if m.Watchdog != 0 {
		parts = append(parts, "watchdog="+strconv.Itoa(m.Watchdog))
	}
	return strings.Join(parts, " ")
}

// Errors a Task's Cause may return, Start's error after Close, and
// SetTaskMemoryLimit's without a tasks' memory cgroup.
var (
	// ErrTerminated: Task.Terminate (or Supervisor.Close) ended the task.
	ErrTerminated = errors.New("supervise: task terminated")
	// ErrKilled: Task.Kill or Supervisor.KillAll ended the task at once.
	ErrKilled = errors.New("supervise: task killed")
	// ErrClosed: the Supervisor is closed.
	ErrClosed = errors.New("supervise: supervisor closed")
	// ErrUnsupported: supervision needs Linux.
	ErrUnsupported = errors.New("supervise: not supported on this OS")
	// ErrNoTaskMemory: the Supervisor has no tasks' memory cgroup
	// (Mechanisms.NoTaskMemoryReason says why).
	ErrNoTaskMemory = errors.New("supervise: no memory cgroup of the tasks'")
)
