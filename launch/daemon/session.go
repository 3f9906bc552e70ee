package daemon

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/farm"
	"github.com/numasteal/numasteal/launch"
)

// conn is an accepted connection: an *os.File of the socket on Linux
// (accept_linux.go), a *net.UnixConn elsewhere.
type conn interface {
	io.ReadWriteCloser
	syscall.Conn
	SetReadDeadline(t time.Time) error
}

// session serves one connection: at most one job at a time, which ends
// (waiting or running) when the connection does, unless it was handed off
// to its process (see handoff). The accept loop starts it (Server.serve) and
// answers a first acquire that is granted at once itself; a goroutine
// serves the rest (serve).
type session struct {
	s    *Server
	c    conn
	r    *bufio.Reader
	in   *connReader
	peer cred
	held *job
	// handedOff is the job whose launcher exec'd its command: the
	// session watches its process once the connection is closed.
	handedOff *job
	// atGrant: the launcher takes a handoff grant as the handoff itself
	// and execs without sending "exec" (its request said atgrant=1).
	atGrant bool
}

// errWouldBlock: the session's first read found nothing more to read.
var errWouldBlock = errors.New("nothing to read yet")

// connReader reads a conn for the session's bufio.Reader. While dontWait
// is set a read takes only what has arrived and returns errWouldBlock
// when nothing has: the accept loop must never wait for a launcher.
type connReader struct {
	c        conn
	dontWait bool
}

func (cr *connReader) Read(p []byte) (int, error) {
	if !cr.dontWait {
		return cr.c.Read(p)
	}
	rc, err := cr.c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var rerr error
	// The function returns true: the read never parks.
	if err := rc.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), p, unix.MSG_DONTWAIT)
		return true
	}); err != nil {
		return 0, err
	}
	switch {
	case rerr == unix.EAGAIN || rerr == unix.EINTR:
		return 0, errWouldBlock
	case rerr != nil:
		return 0, rerr
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// firstWait bounds how long the accept loop waits for the first request
// of a connection that has none yet: a launcher writes it right after its
// connect, so it is almost always there when the loop wakes.
const firstWait = time.Millisecond

// serve begins serving c in the accept loop, with nothing but
// non-blocking reads: a first acquire that is granted at once is answered
// here, one thread's wake-up after the launcher's connect; everything
// else, and the rest of the connection, is served by a goroutine.
func (s *Server) serve(c conn) {
	ss := &session{s: s, c: c}
	ss.in = &connReader{c: c, dontWait: true}
	ss.r = bufio.NewReaderSize(ss.in, connBuffer)
	peer, err := peerCred(c)
	if err != nil || peer.uid != os.Getuid() {
		ss.reply(launch.NewMsg("error", "code", "perm", "msg", "connection from another user"))
		ss.end()
		return
	}
	ss.peer = peer
	line := ss.firstLine()
	ss.in.dontWait = false
	var pending *job
	handoff := false
	if line != nil {
		m, err := launch.ParseMsg(line)
		if err == nil && m.Verb == "acquire" {
			ss.r.Discard(len(line))
			j, ok := ss.acquire(m)
			if !ok {
				ss.end()
				return
			}
			handoff = isSet(m, "handoff")
			if !ss.granted(j) {
				pending = j
			} else if !ss.grantReply(j, handoff) {
				ss.end()
				if j := ss.handedOff; j != nil {
					go ss.s.watchHandoff(j)
				}
				return
			}
		}
	}
	go ss.serve(pending, handoff)
}

// firstLine returns the first line of the connection when it has arrived
// whole (waiting for it up to firstWait), else nil; the line stays
// buffered.
func (ss *session) firstLine() []byte {
	for attempt := 0; attempt < 2; attempt++ {
		ss.r.Peek(1) // one non-blocking read, unless bytes are buffered
		if buf, _ := ss.r.Peek(ss.r.Buffered()); len(buf) > 0 {
			if i := bytes.IndexByte(buf, '\n'); i >= 0 {
				return buf[:i+1]
			}
			if ss.r.Buffered() == ss.r.Size() {
				return nil // a long line: the goroutine reads it
			}
		}
		if attempt == 0 && !ss.poll(firstWait) {
			return nil
		}
	}
	return nil
}

// poll waits up to d for the connection to be readable.
func (ss *session) poll(d time.Duration) bool {
	rc, err := ss.c.SyscallConn()
	if err != nil {
		return false
	}
	ready := false
	rc.Control(func(fd uintptr) {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, int(d/time.Millisecond))
		ready = err == nil && n > 0
	})
	return ready
}

func isSet(m launch.Msg, key string) bool {
	v, _ := m.Get(key)
	return v == "1"
}

// end ends the session: its job, if it still holds one, is dropped
// (waiting) or its slot freed (running), and the connection closed.
func (ss *session) end() {
	s := ss.s
	s.mu.Lock()
	if held := ss.held; held != nil {
		s.pool.remove(held)
		if held.pidfd != nil {
			held.pidfd.Close()
		}
	}
	s.active--
	s.idleLocked()
	s.mu.Unlock()
	ss.c.Close()
}

func (ss *session) reply(m launch.Msg) bool {
	_, err := ss.c.Write(m.Append(nil))
	return err == nil
}

func (ss *session) next() (launch.Msg, error) {
	line, err := readLine(ss.r)
	if err != nil {
		return launch.Msg{}, err
	}
	return launch.ParseMsg(line)
}

// wake interrupts the read of a waiting connection when its job is
// granted: a read deadline in the past (deadlines are safe to set from
// any goroutine).
func (ss *session) wake() { ss.c.SetReadDeadline(time.Unix(1, 0)) }

// acquire makes and queues the job of request m. ok is false when the
// session must end (it has replied).
func (ss *session) acquire(m launch.Msg) (j *job, ok bool) {
	s := ss.s
	derived := false
	if b, _ := m.Get("build"); b == "" {
		var build string
		if ppid, ok := m.Int("ppid"); ok {
			build = s.builds.OfParent(int(ppid))
		} else {
			build = s.builds.Of(ss.peer.pid)
		}
		m.Fields = append(m.Fields, launch.Field{Key: "build", Value: build})
		derived = true
	}
	j = s.newJob(m, ss.peer.pid)
	j.wake = ss.wake
	ss.held = j
	ss.atGrant = isSet(m, "atgrant")
	s.mu.Lock()
	if derived && s.watchBuildLocked(j.build) {
		s.mu.Unlock()
		ss.reply(goneMsg(j.build))
		return nil, false
	}
	s.pool.submit(j)
	s.mu.Unlock()
	return j, true
}

// granted reports whether j was admitted, and then clears the read
// deadline its admission set (wake). The admission closes j.granted and
// then wakes, both under s.mu: clearing under s.mu too comes after the
// wake, which would otherwise cut every later read of the connection
// short (the launcher's "done" among them) when the session looks
// between the two.
func (ss *session) granted(j *job) bool {
	select {
	case <-j.granted:
		ss.s.mu.Lock()
		ss.c.SetReadDeadline(time.Time{})
		ss.s.mu.Unlock()
		return true
	default:
		return false
	}
}

// awaitGrant waits for j's admission, reading the connection to see the
// launcher go; false when the connection must end.
func (ss *session) awaitGrant(j *job) bool {
	for !ss.granted(j) {
		m, err := ss.next()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			continue // granted, or about to be: look again
		case err != nil:
			return false // the launcher is gone: end frees the job
		}
		ss.reply(launch.NewMsg("error", "code", "order", "msg", "request "+m.Verb+" before the grant"))
		return false
	}
	return true
}

// grantReply replies with the grant of j, admitted: its CPU and node, or
// its farm host; false when the connection must end.
func (ss *session) grantReply(j *job, handoff bool) bool {
	s := ss.s
	if j.dropped { // its build ended while it waited
		ss.reply(goneMsg(j.build))
		return false
	}
	s.mu.Lock()
	lease := j.lease
	g := launch.NewMsg("grant", "job", strconv.FormatInt(j.id, 10))
	if lease != nil {
		// A remote job: the launcher runs distcc and reports. distcc
		// preprocesses here, outside the slots: at most as many
		// preprocessors as slots run at once.
		g.Fields = append(g.Fields, launch.Field{Key: "host", Value: lease.Host.DistccHostsPreprocessing(s.pool.slots)})
	} else {
		g.Fields = append(g.Fields, launch.Field{Key: "cpu", Value: strconv.Itoa(j.cpu)},
			launch.Field{Key: "node", Value: strconv.Itoa(j.node)},
			launch.Field{Key: "mem_kib", Value: strconv.FormatInt(j.need>>10, 10)})
		// The launcher stays the parent, to run the job again after an
		// OOM kill, when memory is tight: unless the job would fit twice
		// over. (A job with an output not yet learned is measured
		// anyway.)
		if s.mem.Room() < j.need {
			j.measure = true
		}
	}
	if j.attempt > 0 {
		g.Fields = append(g.Fields, launch.Field{Key: "retry", Value: strconv.Itoa(j.attempt)})
	}
	s.mu.Unlock()
	if handoff && !j.measure && lease == nil {
		// The launcher waits for this reply, so peer.pid is alive and
		// still the launcher.
		j.pidfd = openPidfd(ss.peer.pid)
	}
	if j.pidfd != nil {
		g.Fields = append(g.Fields, launch.Field{Key: "handoff", Value: "1"})
		if ss.atGrant {
			g.Fields = append(g.Fields, launch.Field{Key: "atgrant", Value: "1"})
		}
		// No launcher is left to continue the command should this
		// daemon die: never freeze it.
		s.mem.SetFixed(j.id)
	}
	if !ss.reply(g) {
		return false
	}
	if j.pidfd != nil && ss.atGrant {
		// The grant was the handoff: the process owns the slot from
		// now on, and nothing more comes on the connection, which the
		// launcher's exec closes. The daemon has nothing to do while
		// the command starts.
		ss.takeHandoff()
		return false
	}
	return true
}

// takeHandoff makes the held job the process's: watched on its pidfd once
// the connection is closed.
func (ss *session) takeHandoff() {
	ss.s.handoff(ss.held)
	ss.handedOff, ss.held = ss.held, nil
}

// serve serves the connection until it ends, first waiting for the grant
// of pending, a job start queued; then, for a job handed off, it waits
// for the job's process to end.
func (ss *session) serve(pending *job, handoff bool) {
	ss.requests(pending, handoff)
	ss.end()
	if j := ss.handedOff; j != nil {
		ss.s.watchHandoff(j)
	}
}

// requests serves the connection's requests until it ends.
func (ss *session) requests(pending *job, handoff bool) {
	if pending != nil && !(ss.awaitGrant(pending) && ss.grantReply(pending, handoff)) {
		return
	}
	for {
		m, err := ss.next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				code := "malformed"
				if errors.Is(err, launch.ErrVersion) {
					code = "version"
				}
				ss.reply(launch.NewMsg("error", "code", code, "msg", err.Error(), "version", strconv.Itoa(launch.Version)))
			}
			return
		}
		if !ss.handle(m) {
			return
		}
	}
}

// handle serves one request; false when the connection must end.
func (ss *session) handle(m launch.Msg) bool {
	s := ss.s
	switch m.Verb {
	case "acquire":
		if ss.held != nil {
			ss.reply(launch.NewMsg("error", "code", "busy", "msg", "this connection holds a job already"))
			return false
		}
		j, ok := ss.acquire(m)
		return ok && ss.awaitGrant(j) && ss.grantReply(j, isSet(m, "handoff"))
	case "exec":
		if ss.held == nil || !ss.held.running || ss.held.pidfd == nil {
			ss.reply(launch.NewMsg("error", "code", "order", "msg", "exec without a handoff grant"))
			return false
		}
		// The exec closes the connection: nothing more is read.
		ss.takeHandoff()
		return false
	case "done":
		return ss.done(m)
	case "jobserver":
		if ss.held != nil {
			ss.reply(launch.NewMsg("error", "code", "busy", "msg", "this connection holds a job already"))
			return false
		}
		name, _ := m.Get("name")
		if name == "" {
			name = "build"
		}
		js, r, w, err := s.startJobserver(ss.peer.pid, name)
		if err != nil {
			ss.reply(launch.NewMsg("error", "code", "jobserver", "msg", err.Error()))
			return false
		}
		err = ss.sendRights(s.jobserverReply(js).Append(nil), unix.UnixRights(int(r.Fd()), int(w.Fd())))
		r.Close()
		w.Close()
		return err == nil
	case "status":
		b, _ := json.Marshal(s.Status())
		return ss.reply(launch.NewMsg("status", "json", string(b)))
	case "ping":
		return ss.reply(launch.NewMsg("pong", "pid", strconv.Itoa(os.Getpid()), "version", strconv.Itoa(launch.Version)))
	default:
		return ss.reply(launch.NewMsg("error", "code", "verb", "msg", "unknown request "+m.Verb))
	}
}

// done takes the report of the held job's end: its peak memory is
// learned, and after an OOM kill it runs again or is refused.
func (ss *session) done(m launch.Msg) bool {
	s := ss.s
	held := ss.held
	if held == nil || !held.running {
		ss.reply(launch.NewMsg("error", "code", "order", "msg", "done without a running job"))
		return false
	}
	kib, _ := m.Int("rss_kib")
	st, _ := m.Get("status")
	var o farm.Outcome
	if held.lease != nil {
		o = remoteOutcome(held, m)
	}
	s.mu.Lock()
	if held.lease != nil {
		// distcc's peak RSS is not the compiler's: nothing learned.
		held.outcome = o
		if o.HostFault {
			st = "distcc failed"
		}
	}
	s.traceLocked(held, kib, st)
	s.pool.remove(held)
	var peak int64
	if held.lease == nil {
		peak = s.learnLocked(held, kib)
	}
	again, refuse := s.afterKillLocked(held, m, peak)
	if !o.HostFault && again == nil {
		s.admitted++ // a failed farm attempt is not a job done: it runs again
	}
	s.mu.Unlock()
	ss.held = again
	switch {
	case again != nil:
		return ss.awaitGrant(again) && ss.grantReply(again, false)
	case refuse != "":
		return ss.reply(launch.NewMsg("error", "code", "oom", "msg", refuse))
	default:
		return ss.reply(launch.NewMsg("ok"))
	}
}

// sendRights writes b with the descriptors of rights (SCM_RIGHTS).
func (ss *session) sendRights(b, rights []byte) error {
	rc, err := ss.c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), b, rights, nil, 0)
		return serr != unix.EAGAIN
	}); err != nil {
		return err
	}
	return serr
}
