package daemon

import (
	"os"
	"sort"
	"time"
)

// Status is what "numasteal status" shows: the daemon's JSON answer to
// a status request.
type Status struct {
	PID       int          `json:"pid"`
	Uptime    float64      `json:"uptime_s"`
	Slots     int          `json:"slots"`
	MemBudget int64        `json:"mem_budget_kib"`
	MemUsed   int64        `json:"mem_used_kib"`
	Done      int64        `json:"done"`
	Running   []JobStatus  `json:"running"`
	Waiting   []BuildQueue `json:"waiting"`
	Learned   int          `json:"learned_outputs"`
}

// JobStatus is one running job.
type JobStatus struct {
	ID      int64   `json:"id"`
	Build   string  `json:"build"`
	Kind    string  `json:"kind"`
	Out     string  `json:"out"`
	CPU     int     `json:"cpu"`
	Node    int     `json:"node"`
	NeedKiB int64   `json:"need_kib"`
	Learned bool    `json:"learned"`
	For     float64 `json:"running_s"`
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
		Slots: s.pool.slots, MemBudget: s.pool.budget >> 10, MemUsed: s.pool.memUsed >> 10,
		Done: s.admitted, Learned: len(s.rss.kib),
		Running: []JobStatus{}, Waiting: []BuildQueue{},
	}
	for _, j := range s.pool.running {
		st.Running = append(st.Running, JobStatus{
			ID: j.id, Build: j.build, Kind: j.kind, Out: j.out, CPU: j.cpu, Node: j.node,
			NeedKiB: j.need >> 10, Learned: j.learned, For: time.Since(j.started).Seconds(),
		})
	}
	sort.Slice(st.Running, func(a, b int) bool { return st.Running[a].ID < st.Running[b].ID })
	for _, q := range s.pool.builds {
		st.Waiting = append(st.Waiting, BuildQueue{Build: q.id, Waiting: len(q.jobs)})
	}
	return st
}
