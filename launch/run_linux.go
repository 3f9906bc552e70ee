package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/numasteal/numasteal/affinity"
	"github.com/numasteal/numasteal/topology/cpuset"
)

// Run launches c.Args as the package documentation describes and returns
// the launcher's exit status, the command's; when the command was killed
// by a signal, Run kills the launcher with the same signal and does not
// return. Run must be called from the main goroutine, which it locks to
// its thread for good once the slot is granted when it forks the command
// (with Pdeathsig, which the kernel sends when the forking thread ends) or
// pins it: a command handed off on a machine of one node is exec'd from
// whatever thread runs the goroutine.
func Run(c Config) int {
	stderr := c.stderr()
	if len(c.Args) == 0 {
		fmt.Fprintf(stderr, "usage: %s COMMAND [ARGS...]\n", c.Prog)
		return 2
	}
	if os.Getenv(SlotEnv) != "" || os.Getenv("NUMASTEAL_LAUNCH") == "off" {
		in := startSignals()
		prog, argv, code := c.program(stderr)
		if code != 0 {
			return code
		}
		return execDirect(in, c.Prog, prog, argv, os.Environ(), stderr)
	}

	paths := PathsFromEnv(os.Getenv)
	// The build is $NUMASTEAL_BUILD, else the daemon finds it from this
	// process's ancestry (Builds).
	build := sanitizeID(os.Getenv("NUMASTEAL_BUILD"))
	if paths.Unusable != "" {
		warnOnce(paths, localBuild(build)+".runtime-dir", stderr, fmt.Sprintf(
			"%s: warning: %s; using %s", c.Prog, paths.Unusable, paths.Dir))
	}
	// The request needs only the command line: the program found in PATH
	// has the base name of c.Args[0], and a path names itself.
	kind, out := Classify(c.Args[0], c.Args[1:])
	if out != "" && !filepath.IsAbs(out) {
		// getcwd(2) alone: os.Getwd compares $PWD and "." first (two
		// stat calls).
		if wd, err := syscall.Getwd(); err == nil {
			out = filepath.Join(wd, out)
		}
	}
	req := NewMsg("acquire", "kind", string(kind), "out", out, "pid", strconv.Itoa(os.Getpid()),
		"cmd", filepath.Base(c.Args[0]), "handoff", "1", "atgrant", "1")
	if build != "" {
		req.Fields = append(req.Fields, Field{Key: "build", Value: build})
	} else {
		// The daemon names the build from the parent (Builds.OfParent).
		req.Fields = append(req.Fields, Field{Key: "ppid", Value: strconv.Itoa(os.Getppid())})
	}
	if os.Getenv(MeasureEnv) == "1" {
		req.Fields = append(req.Fields, Field{Key: "measure", Value: "1"})
	}
	var compiler string
	if kind == Compile {
		var ok bool
		if compiler, ok = farmCompile(c.Args[0], c.Args); ok {
			req.Fields = append(req.Fields, Field{Key: "remote", Value: "1"})
		}
	}
	a := acquirer{paths: paths, serve: c.Serve, getenv: os.Getenv}
	// While a running daemon decides, the launcher does the rest of its
	// own work: the signals it inherited, the program in PATH, the
	// machine's nodes. A daemon is started only for a program that
	// exists.
	sendErr := a.send(req, false)
	in := startSignals()
	// The command goes to the OOM killer before make, the daemon and this
	// launcher (package doc, step 5; oomAdj).
	oom := raiseOOM()
	prog, argv, code := c.program(stderr)
	if code != 0 {
		a.close()
		return code
	}
	online := onlineNodes("/sys")
	direct := func(err error) int {
		if errors.Is(err, errBuildGone) {
			// make is gone (killed, or dead of SIGPIPE under "| head"):
			// one line, and no compile for nobody.
			fmt.Fprintf(stderr, "%s: %s %v\n", c.Prog, c.Args[0], err)
			return 1
		}
		warnOnce(paths, localBuild(build), stderr, fmt.Sprintf(
			"%s: warning: running commands of this build directly, without the daemon's slots: %v", c.Prog, err))
		return execDirect(in, c.Prog, prog, argv, os.Environ(), stderr)
	}
	if errors.Is(sendErr, errNotRunning) {
		sendErr = a.send(req, true)
	}
	if sendErr != nil {
		return direct(sendErr)
	}
	slot, err := a.wait()
	if err != nil {
		return direct(err)
	}
	fw := newForwarder(in)
	if host, _ := slot.grant.Get("host"); host != "" {
		code, retry := 0, true
		if distcc, ok := findDistcc(prog); ok {
			runtime.LockOSThread() // never unlocked: see Pdeathsig in doc.go
			code, retry = runRemote(in, fw, oom, c.Prog, distcc, append([]string{compiler}, argv[1:]...), host, slot, stderr)
		} else {
			slot.conn.Close() // no distcc: the lease goes back unused
		}
		if !retry {
			return code
		}
		// distcc itself failed: the compile runs here, in a local slot,
		// once. Nothing of it ran (distcc's fallback is off).
		local := Msg{Verb: req.Verb}
		for _, f := range req.Fields {
			if f.Key != "remote" {
				local.Fields = append(local.Fields, f)
			}
		}
		local.Fields = append(local.Fields, Field{Key: "local", Value: "1"})
		if slot, err = a.acquire(local); err != nil {
			return direct(err)
		}
	}
	return runLocal(in, fw, oom, c.Prog, prog, argv, slot, online, stderr)
}

// runLocal runs the command prog argv in the local slot granted: pinned to
// its CPU, then handed off (exec in the launcher's place) or measured
// (forked, waited for and reported).
func runLocal(in inherited, fw *forwarder, oom *oomAdj, progName, prog string, argv []string, slot *slot, online cpuset.Set, stderr io.Writer) int {
	handoff, _ := slot.grant.Get("handoff")
	if handoff != "1" || online.Len() >= 2 {
		// The thread is the command's: it forks it with Pdeathsig (see
		// doc.go), or it is pinned and given the node's memory policy,
		// which the exec keeps. Never unlocked. A handoff on a machine of
		// one node needs no thread of its own, and no thread is started
		// for the runtime's locked-thread bookkeeping.
		runtime.LockOSThread()
	}
	pin(slot.grant, online)
	preferNode(slot.grant, online)
	env := withEnv(os.Environ(), SlotEnv, slot.job)
	if handoff == "1" {
		// The daemon watches this process from now on; the exec closes
		// the connection (close-on-exec). A daemon that took the grant
		// itself as the handoff (atgrant) waits for no word; one of an
		// older launcher protocol waits for "exec". A daemon gone
		// meanwhile only loses the slot's end: the command runs, once.
		if atGrant, _ := slot.grant.Get("atgrant"); atGrant != "1" {
			slot.conn.Send(NewMsg("exec"))
		}
		return execDirect(in, progName, prog, argv, env, stderr)
	}
	for {
		ch, err := runChild(in, fw, oom, prog, argv, env, slot.conn)
		if err != nil {
			slot.conn.Close()
			fmt.Fprintf(stderr, "%s: %s: %v\n", progName, prog, startError(err))
			if !ch.started {
				return 127
			}
			return 1
		}
		ws := ch.st.Sys().(syscall.WaitStatus)
		var rssKiB int64
		if ru, ok := ch.st.SysUsage().(*syscall.Rusage); ok {
			rssKiB = ru.Maxrss // KiB on Linux: the command and every child it waited for
		}
		done := NewMsg("done", "rss_kib", strconv.FormatInt(rssKiB, 10),
			"wall_us", strconv.FormatInt(ch.wall.Microseconds(), 10),
			"status", strconv.Itoa(ws.ExitStatus()))
		if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			// The report is best effort, and needs no answer: a daemon
			// gone meanwhile only loses the measurement; the command
			// ran, exactly once.
			slot.conn.Send(done)
			slot.conn.Close()
			if ws.Signaled() {
				dieBySignal(ws.Signal())
			}
			return ws.ExitStatus()
		}
		// SIGKILL: the kernel's OOM killer, or someone. The daemon tells
		// which, and whether the command runs again ("OOM kills" in the
		// package documentation); the launcher says whether it passed
		// on a signal of its own, which makes it the user's.
		done.Fields = append(done.Fields, Field{Key: "signal", Value: strconv.Itoa(int(syscall.SIGKILL))})
		if ch.interrupted {
			done.Fields = append(done.Fields, Field{Key: "interrupted", Value: "1"})
		}
		reply, err := slot.conn.Call(done)
		if err != nil || reply.Verb != "grant" {
			slot.conn.Close()
			if msg, ok := reply.Get("msg"); ok && reply.Verb == "error" {
				fmt.Fprintf(stderr, "%s: %s\n", progName, msg)
			}
			dieBySignal(syscall.SIGKILL)
		}
		pin(reply, online)
	}
}

// pin pins the calling thread, whose mask the command inherits, to the
// CPU the grant names, on a machine of more than one online node (online,
// from onlineNodes): there the CPU keeps the command on the node whose
// memory it was placed by. On a machine of one node the CPU is the
// daemon's count of its slots, not a place: pinned, a compile could not
// leave a CPU that other work keeps busy, nor start its driver's children
// on another CPU, and it would pay the launcher's move to that CPU. A
// refused pin (the CPU left our cpuset) costs only placement.
func pin(grant Msg, online cpuset.Set) {
	if cpu, ok := grant.Int("cpu"); ok && cpu >= 0 && online.Len() >= 2 {
		_ = affinity.PinThread(cpuset.Of(int(cpu)))
	}
}

// remoteIOTimeout is DISTCC_IO_TIMEOUT for a remote compile when the
// environment does not set it, in seconds: a host that takes the job and
// never answers costs it two minutes (distcc's default is five), and a
// compile that takes longer remotely runs here again.
const remoteIOTimeout = "120"

// runRemote runs argv (the compiler as distcc is to name it, and its
// arguments) on the farm host the grant of s names: distcc with that host
// alone, its fallback and local retry off (the daemon, not distcc,
// decides where a job runs), and its own back-off at one second (0 would
// turn it off, but distcc 3.4 then retries a refused connection until it
// runs out of descriptors; the farm's back-off is longer anyway). distcc's
// own messages go to $DISTCC_LOG when it is set, else nowhere: its
// failures are retried here and show in the daemon's status (the host's
// last error), while the compiler's output passes through. It waits for
// distcc, reports "done" with its status, wall time and whether distcc
// itself failed (its exit codes 100 to 127, or its crash), and returns
// the launcher's exit status, or retry when distcc failed and the compile
// must run here. A distcc killed by any other signal (Ctrl-C, make's
// SIGTERM) kills the launcher likewise.
func runRemote(in inherited, fw *forwarder, oom *oomAdj, progName, distcc string, argv []string, host string, s *slot, stderr io.Writer) (code int, retry bool) {
	env := withEnv(os.Environ(), SlotEnv, s.job)
	for _, kv := range [...][2]string{
		{"DISTCC_HOSTS", host}, {"DISTCC_FALLBACK", "0"}, {"DISTCC_SKIP_LOCAL_RETRY", "1"},
		{"DISTCC_BACKOFF_PERIOD", "1"},
	} {
		env = withEnv(env, kv[0], kv[1])
	}
	if os.Getenv("DISTCC_IO_TIMEOUT") == "" {
		env = withEnv(env, "DISTCC_IO_TIMEOUT", remoteIOTimeout)
	}
	if os.Getenv("DISTCC_LOG") == "" {
		env = withEnv(env, "DISTCC_LOG", os.DevNull)
	}
	ch, err := runChild(in, fw, oom, distcc, append([]string{distcc}, argv...), env, s.conn)
	st, wall := ch.st, ch.wall
	if err != nil && !ch.started {
		// Nothing ran: the lease goes back unused, the compile runs here.
		s.conn.Close()
		fmt.Fprintf(stderr, "%s: %s: %v; compiling locally\n", progName, distcc, startError(err))
		return 0, true
	}
	if err != nil {
		s.conn.Close()
		fmt.Fprintf(stderr, "%s: %v\n", progName, err)
		return 1, false
	}
	ws := st.Sys().(syscall.WaitStatus)
	status := ws.ExitStatus()
	fault := ws.Exited() && status >= distccErrMin && status <= distccErrMax
	if ws.Signaled() && crashSignal(ws.Signal()) {
		fault, status = true, 128+int(ws.Signal())
	}
	done := NewMsg("done", "wall_us", strconv.FormatInt(wall.Microseconds(), 10),
		"status", strconv.Itoa(status))
	if fault {
		done.Fields = append(done.Fields, Field{Key: "remote_fault", Value: "1"})
	}
	// As for a measured command, the report needs no answer.
	s.conn.Send(done)
	s.conn.Close()
	if fault {
		return 0, true
	}
	if ws.Signaled() {
		dieBySignal(ws.Signal())
	}
	return status, false
}

// startError is err of a command that could not start without the
// "fork/exec PATH" that os.StartProcess puts before the reason.
func startError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// crashSignal reports whether a process killed by sig crashed, rather
// than being stopped from outside (SIGINT, SIGTERM, SIGKILL...).
func crashSignal(sig syscall.Signal) bool {
	switch sig {
	case syscall.SIGSEGV, syscall.SIGABRT, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGSYS, syscall.SIGTRAP:
		return true
	}
	return false
}

// Exit codes distcc uses for its own errors (distcc(1), EXIT CODES): not
// the compiler's.
const distccErrMin, distccErrMax = 100, 127

// slot is a granted acquire: the connection that holds it, and the reply.
type slot struct {
	conn  *Conn
	grant Msg
	job   string
}

// errRefused: the daemon answered the request with an error.
var errRefused = errors.New("the daemon refused the request")

// errBuildGone: the daemon dropped the request because the process of
// its build (make...) has ended: nobody waits for the command.
var errBuildGone = errors.New("not run")

// acquirer asks the daemon for slots ("Startup" in the package
// documentation): send connects and sends the request, wait reads the
// answer, so that the launcher does its own work while the daemon
// decides. A connection that breaks before the grant (the daemon was
// killed, or exited idle just as we connected) is retried with a new
// connection, starting a new daemon; nothing has run yet, so nothing runs
// twice.
type acquirer struct {
	paths  Paths
	serve  []string // nil: ServeCommand(getenv), looked up only when no daemon answers
	getenv func(string) string
	req    Msg   // the request sent
	conn   *Conn // its connection, until wait
}

// acquireAttempts bounds the connections one request is sent on.
const acquireAttempts = 4

// errNotRunning: no daemon answers, and send was not to start one.
var errNotRunning = errors.New("no daemon runs")

// send connects and sends req. When no daemon answers it starts one if
// start is set, else it returns errNotRunning.
func (a *acquirer) send(req Msg, start bool) error {
	a.req = req
	if err := a.paths.Ensure(); err != nil {
		return err
	}
	conn, err := Dial(a.paths.Socket)
	if err != nil {
		if !start {
			return errNotRunning
		}
		serve := a.serve
		if serve == nil {
			serve = ServeCommand(a.getenv)
		}
		cl := Client{Paths: a.paths, Serve: serve, ServeFlags: serveFlags(a.getenv)}
		if conn, err = cl.Connect(); err != nil {
			return err
		}
	}
	a.conn = conn
	// A send that fails shows as a failed read in wait, which retries.
	conn.Send(req)
	return nil
}

// close drops the request sent, if any: the daemon gives its slot back.
func (a *acquirer) close() {
	if a.conn != nil {
		a.conn.Close()
		a.conn = nil
	}
}

// wait waits for the answer to the request send sent.
func (a *acquirer) wait() (*slot, error) {
	var last error
	for attempt := 0; attempt < acquireAttempts; attempt++ {
		if attempt > 0 {
			if err := a.send(a.req, true); err != nil {
				return nil, err
			}
		}
		conn := a.conn
		a.conn = nil
		reply, err := conn.Read()
		if err != nil {
			conn.Close()
			if errors.Is(err, ErrVersion) || errors.Is(err, ErrMalformed) {
				return nil, fmt.Errorf("daemon speaks another protocol: %v", err)
			}
			last = err
			continue
		}
		switch reply.Verb {
		case "grant":
			job, _ := reply.Get("job")
			return &slot{conn: conn, grant: reply, job: job}, nil
		case "error":
			conn.Close()
			msg, _ := reply.Get("msg")
			switch code, _ := reply.Get("code"); code {
			case "gone":
				return nil, fmt.Errorf("%w: %s", errBuildGone, msg)
			case "perm":
				if err := OtherUserError(a.paths.Socket); err != nil {
					return nil, err
				}
			}
			return nil, fmt.Errorf("%w: %s", errRefused, msg)
		default:
			conn.Close()
			return nil, fmt.Errorf("daemon speaks another protocol: reply %q", reply.Verb)
		}
	}
	return nil, fmt.Errorf("%w: the connection broke %d times: %v", ErrNoDaemon, acquireAttempts, last)
}

// acquire sends req and waits for its answer.
func (a *acquirer) acquire(req Msg) (*slot, error) {
	if err := a.send(req, true); err != nil {
		return nil, err
	}
	return a.wait()
}

// dieBySignal ends the launcher by sig, so that its parent sees what it
// would have seen of the command. For signals whose Go default is not to
// die by them (SIGQUIT and SIGABRT dump goroutines, SIGUSR1 is ignored) it exits 128+sig instead.
func dieBySignal(sig syscall.Signal) {
	switch sig {
	case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE, syscall.SIGKILL:
		signal.Reset(sig)
		syscall.Kill(os.Getpid(), sig)
		time.Sleep(time.Second) // delivery is asynchronous; the process dies here
	}
	os.Exit(128 + int(sig))
}

// withEnv returns env with key set to value: earlier entries of key are
// dropped, since getenv of C and of Go both take the first.
func withEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			continue
		}
		out = append(out, kv)
	}
	return append(out, key+"="+value)
}

// localBuild is the build's name when the daemon cannot give it: build
// ($NUMASTEAL_BUILD) when set, else found from this process's ancestry as
// the daemon would.
func localBuild(build string) string {
	if build == "" {
		build = NewBuilds("/proc").Of(os.Getpid())
	}
	if build == "" {
		build = "pid-" + strconv.Itoa(os.Getppid())
	}
	return build
}
