package daemon

import (
	"os"
	"sort"
	"time"
)

// Status is what "numasteal status" shows: the daemon's JSON answer to
// a status request.
type Status struct {
	PID    int     `json:"pid"`
	Uptime float64 `json:"uptime_s"`
	Slots  int     `json:"slots"`
	// MemBudget is --mem (0: none); MemHeld the running jobs' needs;
	// Memory what package memory sees now.
	MemBudget int64        `json:"mem_budget_kib"`
	MemUsed   int64        `json:"mem_used_kib"`
	Memory    MemoryStatus `json:"memory"`
	Done      int64        `json:"done"`
	Running   []JobStatus  `json:"running"`
	Waiting   []BuildQueue `json:"waiting"`
	Learned   int          `json:"learned_outputs"`
	// Hosts are the farm's hosts, in list order; none without a farm.
	Hosts []HostStatus `json:"hosts,omitempty"`
	// Jobservers are the builds served a jobserver (numasteal exec).
	Jobservers []JobserverStatus `json:"jobservers,omitempty"`
}

// JobserverStatus is the jobserver of one build ("Jobserver" in the
// package documentation).
type JobserverStatus struct {
	Build string `json:"build"`
	// Lent is the tokens lent (held by the build or idle in its pipe), of
	// them Ahead lent beyond the pool's slots and Idle in the pipe at the
	// last look; Implicit is set when a slot stands for the make's own.
	Lent     int  `json:"lent"`
	Ahead    int  `json:"ahead"`
	Idle     int  `json:"idle"`
	Implicit bool `json:"implicit"`
	// Running and Waiting are the build's launchers now; Peak the most
	// alive at once; Recovered the tokens counted back lost.
	Running   int `json:"running"`
	Waiting   int `json:"waiting"`
	Peak      int `json:"peak_launchers"`
	Recovered int `json:"recovered"`
}

// JobStatus is one running job: on a CPU and node, or on a farm host
// (Host set, CPU and Node -1).
type JobStatus struct {
	ID      int64   `json:"id"`
	Build   string  `json:"build"`
	Kind    string  `json:"kind"`
	Out     string  `json:"out"`
	CPU     int     `json:"cpu"`
	Node    int     `json:"node"`
	Host    string  `json:"host,omitempty"`
	NeedKiB int64   `json:"need_kib"`
	Learned bool    `json:"learned"`
	For     float64 `json:"running_s"`
}

// MemoryStatus is the memory side of admission (package memory): what
// bounds the jobs, what they hold, pressure, frozen jobs and OOM
// retries.
type MemoryStatus struct {
	// Available is what may still be allocated (memory.Sample.Available);
	// Limit the tightest cgroup limit (0: none) and LimitFile its file.
	Available int64  `json:"available_kib"`
	Limit     int64  `json:"limit_kib"`
	LimitFile string `json:"limit_file,omitempty"`
	Reserve   int64  `json:"reserve_kib"`
	// InUse is what the running jobs' processes hold now.
	InUse int64 `json:"in_use_kib"`
	// Some and Full are the recent memory stall shares, percent.
	Some float64 `json:"pressure_some"`
	Full float64 `json:"pressure_full"`
	// Frozen is how many running jobs are frozen; Holding why admission
	// waits for memory ("" when it does not).
	Frozen  int    `json:"frozen"`
	Holding string `json:"holding,omitempty"`
	// Freezes counts the freezes so far; OOMRetries the jobs run again
	// after an OOM kill, OOMFailed those that failed after one.
	Freezes    int64  `json:"freezes"`
	OOMRetries int64  `json:"oom_retries"`
	OOMFailed  int64  `json:"oom_failed"`
	Err        string `json:"error,omitempty"`
}

// HostStatus is one farm host (farm.HostStats): its slots and the
// remote jobs running there now, the jobs it compiled and its faults,
// and whether it backs off after a fault.
type HostStatus struct {
	Host     string  `json:"host"` // name:port
	Slots    int     `json:"slots"`
	Running  int     `json:"running"`
	Jobs     int     `json:"jobs"`
	Failures int     `json:"failures"`
	Down     bool    `json:"down"`
	Score    float64 `json:"score"`
	LastErr  string  `json:"last_error,omitempty"`
}

// BuildQueue is one build's waiting jobs.
type BuildQueue struct {
	Build   string `json:"build"`
	Waiting int    `json:"waiting"`
}

// Status returns the daemon's state now.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{
		PID: os.Getpid(), Uptime: time.Since(s.start).Seconds(),
		Slots: s.pool.slots, MemBudget: s.cfg.Mem >> 10, MemUsed: s.pool.memUsed >> 10,
		Done: s.admitted, Learned: len(s.rss.kib),
		Running: []JobStatus{}, Waiting: []BuildQueue{},
	}
	ms := s.mem.Stats()
	st.Memory = MemoryStatus{
		Available: ms.Sample.Available >> 10, Limit: ms.Sample.Limit >> 10, LimitFile: ms.Sample.LimitFile,
		Reserve: ms.Reserve >> 10, InUse: ms.Used >> 10, Some: ms.Some, Full: ms.Full,
		Frozen: ms.Frozen, Holding: ms.Holding, Freezes: ms.Freezes,
		OOMRetries: s.oomRetries, OOMFailed: s.oomFailed,
	}
	if ms.Err != nil {
		st.Memory.Err = ms.Err.Error()
	}
	for _, j := range s.pool.running {
		js := JobStatus{
			ID: j.id, Build: j.build, Kind: j.kind, Out: j.out, CPU: j.cpu, Node: j.node,
			NeedKiB: j.need >> 10, Learned: j.learned, For: time.Since(j.started).Seconds(),
		}
		if j.lease != nil {
			js.Host = j.lease.Host.Addr()
		}
		st.Running = append(st.Running, js)
	}
	sort.Slice(st.Running, func(a, b int) bool { return st.Running[a].ID < st.Running[b].ID })
	for _, q := range s.pool.builds {
		st.Waiting = append(st.Waiting, BuildQueue{Build: q.id, Waiting: len(q.jobs)})
		if js := q.js; js != nil {
			st.Jobservers = append(st.Jobservers, JobserverStatus{
				Build: js.id, Lent: js.lent, Ahead: js.ahead, Idle: js.idle, Implicit: js.implicit,
				Running: q.running, Waiting: len(q.jobs), Peak: max(js.peak, q.running+len(q.jobs)), Recovered: js.recovered,
			})
		}
	}
	if s.pool.farm != nil {
		for _, h := range s.pool.farm.Stats(time.Now()) {
			st.Hosts = append(st.Hosts, HostStatus{
				Host: h.Host.Addr(), Slots: h.Host.Slots, Running: h.Running, Jobs: h.Jobs,
				Failures: h.Failures, Down: h.Down, Score: h.Score, LastErr: h.LastErr,
			})
		}
	}
	return st
}
