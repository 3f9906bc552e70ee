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

// SlotEnv is set in the environment of a launched command to its job id.
// A launcher that finds it (gcc running a masqueraded ld, a compile that
// runs make) runs its command at once, in the slot it is already in:
// asking for a second slot while holding one could deadlock a full pool.
const SlotEnv = "NUMASTEAL_SLOT"

// Config is one launch.
type Config struct {
	// Args is the command: the program (a name looked up in PATH, or a
	// path) and its arguments.
	Args []string
	// Prog names the launcher in messages ("numasteal launch").
	Prog string
	// Serve starts the daemon when none answers; nil means
	// ServeCommand(os.Getenv).
	Serve []string
	// Stderr gets the launcher's own messages; nil means os.Stderr. The
	// command always gets the launcher's descriptors 0, 1 and 2 themselves.
	Stderr io.Writer
}

// Run launches c.Args as the package documentation describes and returns
// the launcher's exit status, the command's; when the command was killed
// by a signal, Run kills the launcher with the same signal and does not
// return. Run must be called from the main goroutine, which it locks to
// its thread for good: the command is forked from that thread with
// Pdeathsig, and the kernel sends it when the forking thread ends.
func Run(c Config) int {
	runtime.LockOSThread() // never unlocked: see Pdeathsig in doc.go
	stderr := c.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	if c.Prog == "" {
		c.Prog = "numasteal launch"
	}
	if len(c.Args) == 0 {
		fmt.Fprintf(stderr, "usage: %s COMMAND [ARGS...]\n", c.Prog)
		return 2
	}
	prog, err := FindProgram(c.Args[0], os.Getenv("PATH"), SelfStat())
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s: %v\n", c.Prog, c.Args[0], err)
		return 127
	}
	argv := append([]string{prog}, c.Args[1:]...)
	if os.Getenv(SlotEnv) != "" || os.Getenv("NUMASTEAL_LAUNCH") == "off" {
		return execDirect(c.Prog, prog, argv, os.Environ(), stderr)
	}

	paths := PathsFromEnv(os.Getenv)
	build := BuildID(os.Getenv)
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
	slot, err := acquire(paths, serve, os.Getenv, NewMsg("acquire",
		"build", build, "kind", string(kind), "out", out, "pid", strconv.Itoa(os.Getpid()),
		"cmd", filepath.Base(prog)))
	if err != nil {
		warnOnce(paths, build, stderr, fmt.Sprintf(
			"%s: warning: running commands of this build directly, without the daemon's slots: %v", c.Prog, err))
		return execDirect(c.Prog, prog, argv, os.Environ(), stderr)
	}

	if cpu, ok := slot.grant.Int("cpu"); ok && cpu >= 0 {
		// The command inherits the forking thread's mask (this one).
		// A refused pin (the CPU left our cpuset) costs only placement.
		_ = affinity.PinThread(cpuset.Of(int(cpu)))
	}
	env := withEnv(os.Environ(), SlotEnv, slot.job)
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
	stop := forwardSignals(proc)
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
	// The report is best effort: a daemon gone meanwhile only loses the
	// measurement; the command ran, exactly once.
	slot.conn.Call(NewMsg("done", "rss_kib", strconv.FormatInt(rssKiB, 10),
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

// execDirect replaces the launcher with the command (the fallback: no
// slot, nothing to report, and one process fewer).
func execDirect(progName, prog string, argv, env []string, stderr io.Writer) int {
	err := syscall.Exec(prog, argv, env)
	fmt.Fprintf(stderr, "%s: %s: %v\n", progName, prog, err)
	return 127
}

// forwardSignals passes the ending signals the launcher gets to the
// command. A terminal's Ctrl-C reaches both already (one process group),
// so the command may see SIGINT twice; a signal sent to the launcher alone
// (make's own kill, a test's) reaches the command only this way.
func forwardSignals(p *os.Process) (stop func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-ch:
				p.Signal(s)
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(done) }
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
