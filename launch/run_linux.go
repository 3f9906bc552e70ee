package launch

import (
	"errors"
	"fmt"
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
// its thread for good: the command is forked from that thread with
// Pdeathsig, and the kernel sends it when the forking thread ends.
func Run(c Config) int {
	runtime.LockOSThread() // never unlocked: see Pdeathsig in doc.go
	prog, argv, stderr, code := c.program()
	if code != 0 {
		return code
	}
	if os.Getenv(SlotEnv) != "" || os.Getenv("NUMASTEAL_LAUNCH") == "off" {
		return execDirect(c.Prog, prog, argv, os.Environ(), stderr)
	}

	paths := PathsFromEnv(os.Getenv)
	// The build is $NUMASTEAL_BUILD, else the daemon finds it from this
	// process's ancestry (Builds).
	build := sanitizeID(os.Getenv("NUMASTEAL_BUILD"))
	kind, out := Classify(prog, c.Args[1:])
	if out != "" && !filepath.IsAbs(out) {
		if wd, err := os.Getwd(); err == nil {
			out = filepath.Join(wd, out)
		}
	}
	serve := c.Serve
	if serve == nil {
		serve = ServeCommand(os.Getenv)
	}
	req := NewMsg("acquire", "kind", string(kind), "out", out, "pid", strconv.Itoa(os.Getpid()),
		"cmd", filepath.Base(prog), "handoff", "1")
	if build != "" {
		req.Fields = append(req.Fields, Field{Key: "build", Value: build})
	}
	if os.Getenv(MeasureEnv) == "1" {
		req.Fields = append(req.Fields, Field{Key: "measure", Value: "1"})
	}
	slot, err := acquire(paths, serve, os.Getenv, req)
	if err != nil {
		warnOnce(paths, localBuild(build), stderr, fmt.Sprintf(
			"%s: warning: running commands of this build directly, without the daemon's slots: %v", c.Prog, err))
		return execDirect(c.Prog, prog, argv, os.Environ(), stderr)
	}

	if cpu, ok := slot.grant.Int("cpu"); ok && cpu >= 0 {
		// The command inherits the forking thread's mask (this one).
		// A refused pin (the CPU left our cpuset) costs only placement.
		_ = affinity.PinThread(cpuset.Of(int(cpu)))
	}
	env := withEnv(os.Environ(), SlotEnv, slot.job)
	if v, _ := slot.grant.Get("handoff"); v == "1" {
		// The daemon watches this process from now on; the exec closes
		// the connection (close-on-exec). A daemon gone meanwhile only
		// loses the slot's end: the command runs, once.
		slot.conn.Send(NewMsg("exec"))
		return execDirect(c.Prog, prog, argv, env, stderr)
	}
	signals := notifySignals()
	select {
	case sig := <-signals.ch:
		// Stopped before anything ran: end as the signal asks.
		slot.conn.Close()
		dieBySignal(sig.(syscall.Signal))
	default:
	}
	start := time.Now()
	proc, err := os.StartProcess(prog, argv, &os.ProcAttr{
		Env:   env,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		slot.conn.Close()
		fmt.Fprintf(stderr, "%s: %v\n", c.Prog, err)
		return 127
	}
	stop := signals.forward(proc)
	st, err := proc.Wait()
	stop()
	if err != nil {
		slot.conn.Close()
		fmt.Fprintf(stderr, "%s: %v\n", c.Prog, err)
		return 1
	}
	ws := st.Sys().(syscall.WaitStatus)
	var rssKiB int64
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		rssKiB = ru.Maxrss // KiB on Linux: the command and every child it waited for
	}
	// The report is best effort, and needs no answer: a daemon gone
	// meanwhile only loses the measurement; the command ran, exactly once.
	slot.conn.Send(NewMsg("done", "rss_kib", strconv.FormatInt(rssKiB, 10),
		"wall_us", strconv.FormatInt(time.Since(start).Microseconds(), 10),
		"status", strconv.Itoa(ws.ExitStatus())))
	slot.conn.Close()
	if ws.Signaled() {
		dieBySignal(ws.Signal())
	}
	return ws.ExitStatus()
}

// slot is a granted acquire: the connection that holds it, and the reply.
type slot struct {
	conn  *Conn
	grant Msg
	job   string
}

// errRefused: the daemon answered the request with an error.
var errRefused = errors.New("the daemon refused the request")

// acquire asks the daemon for a slot and waits for it. A connection that
// breaks before the grant (the daemon was killed, or exited idle just as
// we connected) is retried with a new connection, starting a new daemon;
// nothing has run yet, so nothing runs twice.
func acquire(p Paths, serve []string, getenv func(string) string, req Msg) (*slot, error) {
	if err := p.Ensure(); err != nil {
		return nil, err
	}
	cl := Client{Paths: p, Serve: serve, ServeFlags: serveFlags(getenv)}
	var last error
	for attempt := 0; attempt < 4; attempt++ {
		conn, err := cl.Connect()
		if err != nil {
			return nil, err
		}
		reply, err := conn.Call(req)
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
			return nil, fmt.Errorf("%w: %s", errRefused, msg)
		default:
			conn.Close()
			return nil, fmt.Errorf("daemon speaks another protocol: reply %q", reply.Verb)
		}
	}
	return nil, fmt.Errorf("%w: the connection broke %d times: %v", ErrNoDaemon, 4, last)
}

// caught holds the ending signals the launcher receives while it waits
// for its command. They are caught before the fork, so that none arriving
// just after it kills the launcher and leaves the command to Pdeathsig's
// SIGKILL.
type caught struct{ ch chan os.Signal }

func notifySignals() caught {
	c := caught{make(chan os.Signal, 4)}
	signal.Notify(c.ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM)
	return c
}

// forward passes the caught signals to the command until stop. A
// terminal's Ctrl-C reaches both already (one process group), so the
// command may see SIGINT twice; a signal sent to the launcher alone
// (make's own kill, a test's) reaches the command only this way.
func (c caught) forward(p *os.Process) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-c.ch:
				p.Signal(s)
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(c.ch); close(done) }
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
