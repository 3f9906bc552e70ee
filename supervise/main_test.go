//go:build linux

package supervise

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
)

// The main goroutine keeps the process's main thread (a lock taken in
// init outlives it), so that TestMain can serve onMainThread there.
func init() { runtime.LockOSThread() }

// mainThread carries the functions onMainThread runs on the main thread.
var mainThread = make(chan func())

// onMainThread runs f on the process's main thread (the thread group's
// leader) and returns when f has.
func onMainThread(f func()) {
	done := make(chan struct{})
	mainThread <- func() { defer close(done); f() }
	<-done
}

// The test binary is also the watchdog (MaybeWatchdog) and, with helperEnv
// set, a supervisor that the SIGKILL test kills (runHelper). The tests run
// off the main thread, which serves onMainThread until they end (goleak's
// VerifyTestMain exits the process).
func TestMain(m *testing.M) {
	MaybeWatchdog()
	if os.Getenv(helperEnv) != "" {
		os.Exit(runHelper())
	}
	go goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/numasteal/numasteal/supervise.TestMain"))
	for f := range mainThread {
		f()
	}
}

// deadline bounds every wait of these tests: generous, as the machine is
// shared and -race is slow; the waits end as soon as their condition
// holds.
const deadline = 60 * time.Second

// eventually polls cond until it holds, failing the test after deadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for wait := time.Millisecond; !cond(); wait = min(2*wait, 50*time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("after %v: still not %s", deadline, what)
		}
		time.Sleep(wait)
	}
}

// testProc is what the tests read of a process, with their own /proc
// reader (not the package's), so the assertions do not trust the code
// under test.
type testProc struct {
	pid, ppid int
	state     string
}

// markedProcs returns the processes whose environment holds an entry
// starting with prefix (a task's "NUMASTEAL_SUPERVISOR=RUN.N\x00" or a
// run's "NUMASTEAL_SUPERVISOR=RUN."), zombies included.
func markedProcs(prefix string) []testProc {
	var out []testProc
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(d + "/environ")
		if err != nil {
			continue
		}
		if !bytes.Contains(append([]byte{0}, env...), []byte("\x00"+prefix)) {
			continue
		}
		if p, ok := statOf(d); ok {
			out = append(out, p)
		}
	}
	return out
}

// liveMarked is markedProcs without zombies (a zombie's environ is empty
// anyway, so this is a second guard).
func liveMarked(prefix string) []testProc {
	var out []testProc
	for _, p := range markedProcs(prefix) {
		if p.state != "Z" && p.state != "X" {
			out = append(out, p)
		}
	}
	return out
}

// statOf reads state and ppid from /proc/PID/stat.
func statOf(dir string) (testProc, bool) {
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return testProc{}, false
	}
	s := string(b)
	i := strings.LastIndex(s, ")")
	if i < 0 {
		return testProc{}, false
	}
	f := strings.Fields(s[i+1:])
	pid, _ := strconv.Atoi(strings.Fields(s)[0])
	ppid, _ := strconv.Atoi(f[1])
	return testProc{pid: pid, ppid: ppid, state: f[0]}, true
}

// zombieChildren returns this process's children in state Z.
func zombieChildren() []int {
	var out []int
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if p, ok := statOf(d); ok && p.ppid == os.Getpid() && p.state == "Z" {
			out = append(out, p.pid)
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	p, ok := statOf("/proc/" + strconv.Itoa(pid))
	return ok && p.state != "Z" && p.state != "X"
}

// modes runs f with and without cgroups; the cgroup run is skipped where
// the machine has no usable cgroup v2.
func modes(t *testing.T, f func(t *testing.T, o Options)) {
	for _, noCg := range []bool{false, true} {
		name := "cgroup"
		if noCg {
			name = "nocgroup"
		}
		t.Run(name, func(t *testing.T) {
			o := Options{NoCgroup: noCg, Logger: zaptest.NewLogger(t), Grace: 200 * time.Millisecond}
			f(t, o)
		})
	}
}

// newSup returns a Supervisor closed at the end of the test; in the cgroup
// mode it skips when New found no usable cgroup.
func newSup(t *testing.T, o Options) *Supervisor {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if c := s.Mechanisms().Cgroup; c != "" {
			if _, err := os.Stat(c); !os.IsNotExist(err) {
				t.Errorf("run cgroup %s left after Close: %v", c, err)
			}
		}
	})
	if !o.NoCgroup && s.Mechanisms().Cgroup == "" {
		t.Skipf("no usable cgroup v2: %s", s.Mechanisms().NoCgroupReason)
	}
	return s
}

// waitFile waits until path exists and returns its trimmed content.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	eventually(t, path+" written", func() bool { _, err := os.Stat(path); return err == nil })
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}
