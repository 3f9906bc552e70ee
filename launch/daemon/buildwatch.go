package daemon

import (
	"fmt"
	"os"

	"github.com/numasteal/numasteal/launch"
)

// A dead build compiles for nobody. When the build tool process a build
// is named by (launch.Builds: its outermost make, ninja...) ends — make killed, or dead of SIGPIPE under "make | head" —
// its waiting jobs are dropped: each launcher is told "error code=gone"
// and exits at once, without running its command. Its running jobs run
// to their end. The daemon watches each such process with a pidfd from
// the first job of the build on, and checks it again when a job of a
// build it does not watch arrives. A build named by $NUMASTEAL_BUILD, or
// by the launcher's parent when no build tool is above it, is never
// dropped.

// maxBuildWatches bounds the builds watched at once (a pidfd and a
// goroutine each); builds past it are not watched.
const maxBuildWatches = 1024

// buildWatch is the watch of one build's process.
type buildWatch struct{ pidfd *os.File }

// watchBuildLocked makes sure the process of build, a name the daemon
// derived itself, is watched, and reports whether the build is gone
// already (its job must not be queued). s.mu held.
func (s *Server) watchBuildLocked(build string) (gone bool) {
	if _, ok := s.buildWatches[build]; ok || s.closing {
		return false
	}
	pid, ok, gone := launch.BuildProcess("/proc", build)
	if !ok || gone {
		return gone
	}
	if len(s.buildWatches) >= maxBuildWatches {
		return false
	}
	pidfd := openPidfd(pid)
	if pidfd == nil {
		return false // no pidfds: not watched
	}
	// The pidfd is of the process that had pid when it was opened; it is
	// the build's if that process still has the build's start time.
	if _, _, gone := launch.BuildProcess("/proc", build); gone {
		pidfd.Close()
		return true
	}
	if s.buildWatches == nil {
		s.buildWatches = make(map[string]buildWatch)
	}
	s.buildWatches[build] = buildWatch{pidfd: pidfd}
	go func() {
		waitExit(pidfd)
		s.mu.Lock()
		defer s.mu.Unlock()
		if w, ok := s.buildWatches[build]; !ok || w.pidfd != pidfd {
			return // the daemon is shutting down
		}
		delete(s.buildWatches, build)
		pidfd.Close()
		s.dropBuildLocked(build, pid)
	}()
	return false
}

// dropBuildLocked drops the waiting jobs of build, whose process pid has
// ended: each is marked dropped and its launcher woken. s.mu held.
func (s *Server) dropBuildLocked(build string, pid int) {
	q := s.pool.queue(build)
	if q == nil || len(q.jobs) == 0 {
		return
	}
	for _, j := range q.jobs {
		j.dropped = true
		close(j.granted)
		if j.wake != nil {
			j.wake()
		}
	}
	fmt.Fprintf(s.cfg.Log, "numasteal serve: build %s ended (pid %d): dropped its %d waiting jobs\n", build, pid, len(q.jobs))
	q.jobs = nil
	s.pool.forget(q)
	s.pool.admit()
}

// stopBuildWatches ends every build watch (at shutdown). s.mu held.
func (s *Server) stopBuildWatchesLocked() {
	for id, w := range s.buildWatches {
		w.pidfd.Close()
		delete(s.buildWatches, id)
	}
}

// goneMsg is the reply to a job of a build that has ended.
func goneMsg(build string) launch.Msg {
	return launch.NewMsg("error", "code", "gone", "msg", "the build "+build+" has ended")
}
