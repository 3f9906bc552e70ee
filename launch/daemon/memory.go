package daemon

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/launch"
	"github.com/numasteal/numasteal/memory"
)

func priorKey(build, kind string) string { return build + "\x00" + kind }

// priorNeedLocked returns the need the build's own jobs of kind suggest
// (memory.Prior), raised to what a running one holds now; guess when
// none has ended. s.mu held.
func (s *Server) priorNeedLocked(build, kind string, guess int64) int64 {
	var holding int64
	for _, r := range s.pool.running {
		if r.build == build && r.kind == kind && r.lease == nil {
			holding = max(holding, s.mem.Peak(r.id))
		}
	}
	p := s.priors[priorKey(build, kind)]
	if p == nil {
		p = &memory.Prior{}
	}
	return p.Need(guess, holding)
}

// estimateLocked returns the need of job j whose output's peak is not
// learned: its build's prior for its kind, or the first guess, plus a
// tenth. s.mu held.
func (s *Server) estimateLocked(j *job) int64 {
	guess := s.cfg.GuessLink
	if j.kind == string(launch.Compile) {
		guess = s.cfg.GuessCompile
	}
	need := s.priorNeedLocked(j.build, j.kind, guess)
	return need + need/10
}

// estimateBuildLocked returns the need of build's next compile: its
// prior for compiles, or the first guess, plus a tenth. s.mu held.
func (s *Server) estimateBuildLocked(build string) int64 {
	need := s.priorNeedLocked(build, string(launch.Compile), s.cfg.GuessCompile)
	return need + need/10
}

// learnLocked records what a local job that ended held at its peak: the
// measured peak (wait4's, from a measured launcher) or the sampled one,
// whichever is more, in the store by output and in its build's prior. A
// job handed off has only samples, each a moment of it: they raise the
// peak stored for its output, never lower it. s.mu held.
func (s *Server) learnLocked(j *job, reportedKiB int64) int64 {
	peak := max(reportedKiB<<10, j.ended.Peak)
	if peak <= 0 {
		return 0
	}
	if reportedKiB <= 0 {
		if known, ok := s.rss.lookup(j.out); ok {
			peak = max(peak, known)
		}
	}
	if j.learned && reportedKiB > 0 {
		// A re-measure: was the store right?
		if old, ok := s.rss.lookup(j.out); ok {
			s.remeasure.result(old, reportedKiB<<10)
		}
	}
	s.rss.record(j.out, peak>>10)
	key := priorKey(j.build, j.kind)
	p := s.priors[key]
	if p == nil {
		if len(s.priors) >= maxPriors {
			clear(s.priors) // builds come and go; a daemon lives for days
		}
		p = &memory.Prior{}
		s.priors[key] = p
	}
	p.Add(peak)
	return peak
}

// maxPriors bounds the priors kept: a build's and kind's.
const maxPriors = 256

// readmit admits again after the memory governor saw room grow.
func (s *Server) readmit() {
	s.mu.Lock()
	s.pool.admit()
	s.mu.Unlock()
}

// memEvent logs a freeze or a thaw, and puts it in the trace.
func (s *Server) memEvent(id int64, froze bool, why string) {
	verb := "thawed"
	if froze {
		verb = "froze"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.pool.running[id]
	if j == nil {
		return
	}
	fmt.Fprintf(s.cfg.Log, "numasteal serve: %s job %d (%s, %s): %s\n", verb, id, j.cmd, j.out, why)
	if s.trace != nil {
		s.trace.InstantOn(s.trackLocked(j), verb+" "+j.cmd, time.Now(), map[string]any{"out": j.out, "why": why})
	}
}

// describeMemory says what bounds the jobs' memory, for the daemon's
// first log line.
func describeMemory(src *memory.Source, budget int64) string {
	smp, err := src.Sample()
	if err != nil {
		return fmt.Sprintf("memory: %v", err)
	}
	msg := fmt.Sprintf("memory available %d MiB", smp.Available>>20)
	if smp.Limit > 0 {
		msg += fmt.Sprintf(" (limit %d MiB: %s)", smp.Limit>>20, smp.LimitFile)
	}
	if budget > 0 {
		msg += fmt.Sprintf(", budget %d MiB", budget>>20)
	}
	return msg
}

// retryable reports whether a job of kind may run again after the kernel
// killed it: compiles and links rewrite their output whole.
func retryable(kind string) bool {
	return kind == string(launch.Compile) || kind == string(launch.Link)
}

// maxOOMRetries bounds the runs of one job after OOM kills.
const maxOOMRetries = 2

// afterKillLocked decides what follows a measured local job's report m
// when the job died of SIGKILL ("OOM kills" in the package
// documentation): again is the job's next run, queued at the head of its
// build's queue with a need of at least 5/4 of its peak, when the kernel
// OOM-killed it beside other jobs or below nine tenths of the memory
// available as it started, it may run again (a compile or a link) and
// it has runs left; refuse is the message of a job the kernel
// OOM-killed that is not run again. Both are zero for any other end: a
// job killed by the user (the launcher caught a signal: "interrupted"),
// a SIGKILL with no OOM kill counted. s.mu held.
func (s *Server) afterKillLocked(j *job, m launch.Msg, peak int64) (again *job, refuse string) {
	if j.lease != nil {
		return nil, ""
	}
	sig, _ := m.Int("signal")
	if v, _ := m.Get("interrupted"); v == "1" || sig != int64(unix.SIGKILL) || !s.mem.OOMKilledSince(j.ended.OOMKills) {
		return nil, ""
	}
	what := j.cmd
	if j.out != "" {
		what += " -o " + j.out
	}
	// A job that ran alone and was killed at nine tenths of what it could
	// count on does not fit: running it again would fail again. One
	// killed beside other jobs, or because something else took memory
	// while it ran, may fit on its own.
	fits := j.shared || peak < j.ended.Available/10*9
	if retryable(j.kind) && fits && j.attempt < maxOOMRetries {
		s.oomRetries++
		fmt.Fprintf(s.cfg.Log, "numasteal serve: the kernel OOM-killed %s at %d MiB; running it again\n", what, peak>>20)
		if s.trace != nil {
			s.trace.InstantOn(s.trackLocked(j), "oom retry "+j.cmd, time.Now(), map[string]any{"out": j.out, "peak_mib": peak >> 20, "run": j.attempt + 2})
		}
		s.nextID++
		again = &job{
			id: s.nextID, build: j.build, kind: j.kind, out: j.out, cmd: j.cmd, pid: j.pid, peer: j.peer,
			need: max(j.need, peak+peak/4), learned: true, measure: true, local: true,
			attempt: j.attempt + 1, killedAt: peak, cpu: -1, queued: time.Now(), granted: make(chan struct{}), wake: j.wake,
		}
		s.pool.submit(again)
		return again, ""
	}
	s.oomFailed++
	st := s.mem.Stats()
	refuse = fmt.Sprintf("%s was killed by the kernel's OOM killer at a peak of %d MiB", what, peak>>20)
	switch {
	case !retryable(j.kind):
		refuse += "; only compiles and links are run again"
	case !fits:
		refuse += " while it ran alone"
	default:
		refuse += fmt.Sprintf(" %d times", j.attempt+1)
	}
	refuse += fmt.Sprintf("; builds here have %d MiB available", st.Sample.Available>>20)
	if st.Sample.Limit > 0 {
		refuse += fmt.Sprintf(" (limit %d MiB: %s)", st.Sample.Limit>>20, st.Sample.LimitFile)
	}
	fmt.Fprintf(s.cfg.Log, "numasteal serve: %s\n", refuse)
	if s.trace != nil {
		s.trace.InstantOn(s.trackLocked(j), "oom failed "+j.cmd, time.Now(), map[string]any{"out": j.out, "peak_mib": peak >> 20, "why": refuse})
	}
	return nil, refuse
}
