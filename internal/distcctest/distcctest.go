// Package distcctest starts real distccd daemons on loopback ports for the
// compile-farm tests (buildrun's and the launcher's), and stops each one
// with everything it started: its pre-forked workers and the compilers
// they run, which distccd puts in process groups of their own.
package distcctest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/numasteal/numasteal/internal/procstat"
)

// Require skips the test unless distcc, distccd, gcc and the extra tools
// are installed. Run as root where apt-get exists, it first installs
// Debian's distcc package (.ci/run installs it too).
func Require(t testing.TB, extra ...string) {
	t.Helper()
	tools := append([]string{"distcc", "distccd", "gcc"}, extra...)
	missing := func() string {
		for _, tool := range tools {
			if _, err := exec.LookPath(tool); err != nil {
				return tool
			}
		}
		return ""
	}
	if missing() == "" {
		return
	}
	if _, err := exec.LookPath("apt-get"); err == nil && os.Geteuid() == 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "-q", "--no-install-recommends", "distcc")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("apt-get install distcc: %v\n%s", err, out)
		}
	}
	if tool := missing(); tool != "" {
		t.Skipf("%s not installed: the farm tests need distcc, distccd and gcc (Debian's distcc package; .ci/run installs it)", tool)
	}
}

// Daemon is a distccd a test started on a loopback port.
type Daemon struct {
	// Port is the loopback port it listens on, Slots the jobs it runs at
	// once, Log its log file.
	Port, Slots int
	Log         string

	cmd  *exec.Cmd
	once sync.Once
}

// Spec returns the daemon's $DISTCC_HOSTS entry, 127.0.0.1:PORT/SLOTS.
func (d *Daemon) Spec() string { return fmt.Sprintf("127.0.0.1:%d/%d", d.Port, d.Slots) }

// Count returns how many lines of the daemon's log hold word
// (COMPILE_OK, COMPILE_ERROR) now. distccd logs a job after it has sent
// the client its answer, so a job whose client has exited may not be
// there yet: WaitCount waits for it.
func (d *Daemon) Count(t testing.TB, word string) int {
	t.Helper()
	b, err := os.ReadFile(d.Log)
	if err != nil {
		t.Fatalf("distccd log: %v", err)
	}
	return strings.Count(string(b), word)
}

// WaitCount waits until the daemon's log holds at least n lines with word,
// for the jobs whose clients have ended, and returns the count then; it
// fails the test when they are not there within a minute.
func (d *Daemon) WaitCount(t testing.TB, word string, n int) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		c := d.Count(t, word)
		if c >= n {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("distccd logged %d %s within a minute, want %d", c, word, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Start starts n distccd daemons on free loopback ports, each allowing
// 127.0.0.1, running slots jobs and logging in dir, waits until each
// accepts connections, and stops them at the end of the test. dir must be
// writable by everyone (SharedDir): distccd started as root drops to its
// own user. dir is also their $TMPDIR, and their compilers': the files of
// a job that a daemon killed at the end of a test (or in it) had not
// removed yet go with dir, not stay in /tmp.
func Start(t testing.TB, dir string, n, slots int) []*Daemon {
	t.Helper()
	var ds []*Daemon
	for i := range n {
		d := &Daemon{Port: FreePort(t), Slots: slots, Log: filepath.Join(dir, fmt.Sprintf("distccd-%d.log", i))}
		if err := os.WriteFile(d.Log, nil, 0o666); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d.Log, 0o666) // past the umask
		d.cmd = exec.Command("distccd", "--daemon", "--no-detach", "--port", strconv.Itoa(d.Port),
			"--listen", "127.0.0.1", "--allow", "127.0.0.1", "--jobs", strconv.Itoa(slots), "--log-file", d.Log)
		d.cmd.Env = append(os.Environ(), "TMPDIR="+dir)
		d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := d.cmd.Start(); err != nil {
			t.Fatalf("distccd: %v", err)
		}
		t.Cleanup(d.Stop)
		ds = append(ds, d)
	}
	for _, d := range ds {
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(d.Port))
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("distccd on port %d never listened: %v", d.Port, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return ds
}

// Stop kills the daemon and everything it started, then reaps what was
// reparented to this process (a test process is a child subreaper once a
// runner with Subreaper has run). It may be called more than once.
func (d *Daemon) Stop() {
	d.once.Do(func() {
		// Freeze the daemon first, so that it forks no compiler after we
		// have looked; each compiler's own process group is killed by
		// name, since the kill of the daemon's group does not reach it.
		root := d.cmd.Process.Pid
		syscall.Kill(-root, syscall.SIGSTOP)
		pids := Descendants(root)
		groups := map[int]bool{root: true}
		for _, p := range pids {
			if g, err := syscall.Getpgid(p); err == nil {
				groups[g] = true
			}
		}
		for g := range groups {
			syscall.Kill(-g, syscall.SIGKILL)
		}
		for _, p := range pids {
			syscall.Kill(p, syscall.SIGKILL)
		}
		d.cmd.Wait()
		self := os.Getpid()
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			left := false
			for _, p := range append(pids, childrenIn(self, groups)...) {
				if wp, err := syscall.Wait4(p, nil, syscall.WNOHANG, nil); wp == p || (err != nil && parentOf(p) < 0) {
					continue // reaped, or gone
				}
				left = true // alive, or a zombie that comes to us once its parent dies
			}
			if !left {
				break
			}
		}
	})
}

// SharedDir returns a new directory everyone may write (distccd's log,
// the clients' DISTCC_DIR), in the temporary directory itself, since
// t.TempDir's parent is closed to distccd's user; it is removed at the end
// of the test.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "numasteal-distcc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// ClientEnv returns the environment entries that point distcc clients
// at dir (SharedDir): their state (DISTCC_DIR) and their temporary files
// (TMPDIR), which a client killed in a test, or one whose server died,
// would otherwise leave in /tmp.
func ClientEnv(dir string) []string {
	return []string{"DISTCC_DIR=" + dir, "TMPDIR=" + dir}
}

// FreePort returns a loopback TCP port nobody listens on now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Descendants returns the pids of root's descendants, from /proc.
func Descendants(root int) []int {
	children := procChildren()
	var out []int
	for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// childrenIn returns this process's children (parent is self) whose
// process group is one of groups: the orphans of a killed daemon's groups.
func childrenIn(self int, groups map[int]bool) []int {
	var out []int
	for _, pid := range procChildren()[self] {
		if g, err := syscall.Getpgid(pid); err == nil && groups[g] {
			out = append(out, pid)
		}
	}
	return out
}

// parentOf returns pid's parent from /proc, or -1 when pid is gone.
func parentOf(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	st, err := procstat.Parse(data)
	if err != nil {
		return -1
	}
	ppid, err := st.Int(4)
	if err != nil {
		return -1
	}
	return ppid
}

// procChildren maps each pid to its children's, from /proc.
func procChildren() map[int][]int {
	ents, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp := parentOf(pid); pp > 0 {
			children[pp] = append(children[pp], pid)
		}
	}
	return children
}

// HangUp returns the address (127.0.0.1:PORT) of a listener that answers
// every connection as distccd answers numasteal's probe: it reads the
// request and hangs up. A compile sent there fails in distcc; a probe
// finds the host up. It closes at the end of the test.
func HangUp(t testing.TB) string {
	t.Helper()
	return Serve(t, func(c net.Conn) {
		c.Read(make([]byte, 64))
		c.Close()
	})
}

// Serve returns the address (127.0.0.1:PORT) of a loopback listener that
// runs serve on each connection, each in a goroutine of its own, until
// the end of the test.
func Serve(t testing.TB, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return l.Addr().String()
}
