package launch

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Conn is a launcher's connection to the daemon. The daemon ties a slot
// to the connection that holds it: closing the connection, or the death of
// the launcher, gives the slot back. Dial makes it (dial_linux.go,
// dial_other.go).
type Conn struct {
	c io.ReadWriteCloser
	r *bufio.Reader
}

// Call sends m and returns the daemon's reply. An "error" reply is
// returned as a Msg, not an error; err is for the connection and the
// grammar (wrapping ErrVersion for a daemon of another version).
func (c *Conn) Call(m Msg) (Msg, error) {
	if err := c.Send(m); err != nil {
		// A daemon that refuses a connection (another user's: "perm")
		// answers at once and closes, maybe before the request arrives:
		// its answer is still there to read.
		if reply, rerr := c.Read(); rerr == nil && reply.Verb == "error" {
			return reply, nil
		}
		return Msg{}, err
	}
	return c.Read()
}

// Send sends m and does not wait for a reply.
func (c *Conn) Send(m Msg) error {
	_, err := c.c.Write(m.Append(make([]byte, 0, 256)))
	return err
}

// Read reads one message.
func (c *Conn) Read() (Msg, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return Msg{}, fmt.Errorf("%w: reply longer than %d bytes", ErrMalformed, c.r.Size())
		}
		return Msg{}, err
	}
	return ParseMsg(line)
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Client finds, and when needed starts, the daemon ("Startup" in the
// package documentation).
type Client struct {
	Paths Paths
	// Serve is the command line that starts a daemon in the foreground
	// ("numasteal serve"); flags from $NUMASTEAL_SERVE_FLAGS are added.
	// Empty: no daemon is started, a launcher only uses one that runs.
	Serve []string
	// ServeFlags are added after Serve (from $NUMASTEAL_SERVE_FLAGS).
	ServeFlags []string
	// StartTimeout bounds the wait for a started daemon to answer; zero
	// means 30 s.
	StartTimeout time.Duration
}

// ErrNoDaemon: no daemon answers and none could be started.
var ErrNoDaemon = errors.New("no numasteal daemon answers")

// Connect returns a connection to the daemon, starting one when none
// answers. Of many launchers that find none at once, the one that takes
// the start lock starts it; the others wait for the lock and then find it.
func (cl *Client) Connect() (*Conn, error) {
	if c, err := Dial(cl.Paths.Socket); err == nil {
		return c, nil
	}
	if len(cl.Serve) == 0 {
		return nil, ErrNoDaemon
	}
	lock, err := os.OpenFile(cl.Paths.Start, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return nil, err
	}
	// Under the lock: whoever held it before may have started one.
	if c, err := Dial(cl.Paths.Socket); err == nil {
		return c, nil
	}
	exited, err := cl.spawn()
	if err != nil {
		return nil, fmt.Errorf("%w: starting %s: %v", ErrNoDaemon, cl.Serve[0], err)
	}
	timeout := cl.StartTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for wait := 200 * time.Microsecond; ; wait = min(2*wait, 20*time.Millisecond) {
		if c, err := Dial(cl.Paths.Socket); err == nil {
			return c, nil
		}
		select {
		case <-exited:
			// It may have lost to a daemon started by hand; one last try.
			if c, err := Dial(cl.Paths.Socket); err == nil {
				return c, nil
			}
			return nil, fmt.Errorf("%w: %s exited at once (see %s)", ErrNoDaemon, cl.Serve[0], cl.Paths.Log)
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %s did not answer within %v", ErrNoDaemon, cl.Serve[0], timeout)
		}
		time.Sleep(wait)
	}
}

// spawn starts the daemon detached: a session of its own (no terminal
// signal reaches it), standard input /dev/null, output to the log, and
// none of the launcher's other descriptors (make's jobserver pipe, a
// test's output pipe), which it would otherwise hold open for its whole
// life. exited closes when the process ends.
func (cl *Client) spawn() (exited <-chan struct{}, err error) {
	log, err := os.OpenFile(cl.Paths.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(cl.Serve[0], append(cl.Serve[1:len(cl.Serve):len(cl.Serve)], cl.ServeFlags...)...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "NUMASTEAL_SOCKET="+cl.Paths.Socket)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	restore := cloexecInherited()
	err = cmd.Start()
	restore()
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	return done, nil
}

// cloexecInherited marks every descriptor above 2 that would be inherited
// across exec close-on-exec, and returns the function that clears the
// mark again. Only the launcher's own goroutine forks, so nothing else
// sees the window.
func cloexecInherited() (restore func()) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return func() {}
	}
	var marked []int
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue
		}
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC); err == nil {
			marked = append(marked, fd)
		}
	}
	return func() {
		for _, fd := range marked {
			flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
			if err == nil {
				unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags&^unix.FD_CLOEXEC)
			}
		}
	}
}

// ServeCommand returns the command line that starts the daemon: the
// numasteal binary named by $NUMASTEAL_BIN, else "numasteal" in the
// directory of the running executable, else "numasteal" in PATH; nil when
// there is none.
func ServeCommand(getenv func(string) string) []string {
	if b := getenv("NUMASTEAL_BIN"); b != "" {
		return []string{b, "serve"}
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "numasteal")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return []string{p, "serve"}
		}
	}
	if p, err := exec.LookPath("numasteal"); err == nil {
		return []string{p, "serve"}
	}
	return nil
}

// serveFlags splits $NUMASTEAL_SERVE_FLAGS at spaces.
func serveFlags(getenv func(string) string) []string {
	return strings.Fields(getenv("NUMASTEAL_SERVE_FLAGS"))
}

// warnOnce writes msg to w unless this build was warned already: the
// marker is the file Paths.Warned/BUILD, created exclusively, so of many
// launchers of one build exactly one writes. Markers go only in a
// directory Paths.Ensure accepts: for a refused one, in that of
// $TMPDIR/numasteal-UID, else nowhere (every launcher warns).
func warnOnce(p Paths, build string, w io.Writer, msg string) {
	if p.Ensure() != nil {
		p = PathsFromEnv(func(k string) string {
			if k == "NUMASTEAL_SOCKET" || k == "XDG_RUNTIME_DIR" {
				return ""
			}
			return os.Getenv(k)
		})
	}
	if p.Ensure() == nil && (os.Mkdir(p.Warned, 0o700) == nil || dirExists(p.Warned)) {
		f, err := os.OpenFile(filepath.Join(p.Warned, build), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			if errors.Is(err, os.ErrExist) {
				return
			}
		} else {
			f.Close()
		}
	}
	if underCache() {
		// ccache stores a compile's stderr with its object and prints it
		// again on every hit, long after the daemon is back: the warning
		// goes to the terminal, when there is one, and to the log.
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			fmt.Fprintln(tty, msg)
			tty.Close()
		}
		if f, err := os.OpenFile(p.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
			fmt.Fprintln(f, msg)
			f.Close()
		}
		return
	}
	fmt.Fprintln(w, msg)
}

// underCache reports whether the launcher's parent is a compiler cache.
func underCache() bool {
	st, err := readStat("/proc", os.Getppid())
	// ccache and sccache store a compile's stderr and print it again.
	return err == nil && (st.comm == "ccache" || st.comm == "sccache")
}

func dirExists(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}
