package daemon

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/numasteal/numasteal/launch"
)

// waitingConns is how many launchers wait in BenchmarkWaitingConnRSS: the
// issue's 2,000 (ninja -j 1000 for two builds).
const waitingConns = 2000

// BenchmarkWaitingConnRSS measures the daemon's resident memory per
// waiting connection: a daemon of one slot, as a process of its own (this
// test binary, run as one), one job holding the slot, then waitingConns
// connections that each send "acquire" and wait for a grant that does not
// come. The figure is the growth of the daemon's VmRSS
// (/proc/PID/status) from before the waiting connections to when the
// daemon's status counts them all, divided by their number: rss-B/conn
// the first time, in memory fresh from the kernel, which the Go runtime
// knows to be zero and does not touch; rss-again-B/conn after those
// connections closed and as many others came to wait, in memory the
// heap had used before, which it zeroes (a daemon that has run a while).
// Each iteration starts a new daemon.
//
//	go test -run '^$' -bench WaitingConnRSS -benchtime 3x ./launch/daemon
func BenchmarkWaitingConnRSS(b *testing.B) {
	needFiles(b, waitingConns+64)
	var perConn, again, base, peak float64
	for b.Loop() {
		before, first, second := waitingRSS(b, waitingConns)
		perConn += float64(first-before) / waitingConns
		again += float64(second-before) / waitingConns
		base += float64(before)
		peak += float64(max(first, second))
	}
	n := float64(b.N)
	b.ReportMetric(perConn/n, "rss-B/conn")
	b.ReportMetric(again/n, "rss-again-B/conn")
	b.ReportMetric(base/n/1024, "base-rss-KiB")
	b.ReportMetric(peak/n/1024, "peak-rss-KiB")
	b.ReportMetric(0, "ns/op")
}

// needFiles raises the soft RLIMIT_NOFILE to n when it is lower (the
// daemon, a child, inherits it), or skips the benchmark when the hard
// limit is lower.
func needFiles(b *testing.B, n uint64) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		b.Fatal(err)
	}
	if rl.Cur >= n {
		return
	}
	if rl.Max < n {
		b.Skipf("SKIP: RLIMIT_NOFILE's hard limit %d is below the %d files of %d connections", rl.Max, n, waitingConns)
	}
	rl.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		b.Fatal(err)
	}
}

// waitingRSS starts a daemon, holds its slot with one job, and returns
// its VmRSS in bytes before n more connections wait, while they wait,
// and while n others wait after those closed.
func waitingRSS(b *testing.B, n int) (before, first, second int64) {
	dir, err := os.MkdirTemp("", "nsrss")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "sock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), daemonEnv+"=1", "NUMASTEAL_SOCKET="+sock)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	pid := cmd.Process.Pid

	var holder net.Conn
	var conns []net.Conn
	defer func() {
		if holder != nil {
			holder.Close()
		}
		for _, c := range conns {
			c.Close()
		}
	}()
	acquire := launch.NewMsg("acquire", "kind", "compile", "out", filepath.Join(dir, "x.o"),
		"pid", strconv.Itoa(os.Getpid()), "cmd", "cc").Append(nil)
	waitFor(b, "the daemon to answer", func() bool {
		holder, err = net.Dial("unix", sock)
		return err == nil
	})
	if _, err := holder.Write(acquire); err != nil {
		b.Fatal(err)
	}
	if line, err := bufio.NewReader(holder).ReadString('\n'); err != nil || !strings.HasPrefix(line, "ns1 grant ") {
		b.Fatalf("the first acquire: %q, %v", line, err)
	}
	waitFor(b, "the held job running, none waiting", func() bool {
		st := status(b, sock)
		return len(st.Running) == 1 && waiting(st) == 0
	})
	before = vmRSS(b, pid)

	wait := func() int64 {
		for range n {
			c, err := net.Dial("unix", sock)
			if err != nil {
				b.Fatalf("connection %d of %d: %v", len(conns)+1, n, err)
			}
			conns = append(conns, c)
			if _, err := c.Write(acquire); err != nil {
				b.Fatal(err)
			}
		}
		waitFor(b, strconv.Itoa(n)+" connections waiting", func() bool { return waiting(status(b, sock)) == n })
		return vmRSS(b, pid)
	}
	first = wait()
	for _, c := range conns {
		c.Close()
	}
	conns = conns[:0]
	waitFor(b, "no connection waiting", func() bool { return waiting(status(b, sock)) == 0 })
	second = wait()
	b.Logf("daemon VmRSS %d KiB; %d waiting: %d KiB, %.0f B a connection; %d others: %d KiB, %.0f B a connection",
		before>>10, n, first>>10, float64(first-before)/float64(n), n, second>>10, float64(second-before)/float64(n))
	return before, first, second
}

// waitFor polls cond until it holds, failing after a generous deadline.
func waitFor(tb testing.TB, what string, cond func() bool) {
	const deadline = 2 * time.Minute
	end := time.Now().Add(deadline)
	for wait := time.Millisecond; !cond(); wait = min(2*wait, 100*time.Millisecond) {
		if time.Now().After(end) {
			tb.Fatalf("after %v: still not %s", deadline, what)
		}
		time.Sleep(wait)
	}
}

// status asks the daemon for its status on a connection of its own.
func status(b *testing.B, sock string) Status {
	c, err := launch.Dial(sock)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	m, err := c.Call(launch.NewMsg("status"))
	if err != nil {
		b.Fatal(err)
	}
	js, _ := m.Get("json")
	var st Status
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		b.Fatalf("status %q: %v", js, err)
	}
	return st
}

func waiting(st Status) int {
	n := 0
	for _, q := range st.Waiting {
		n += q.Waiting
	}
	return n
}

// vmRSS returns the VmRSS of process pid, in bytes.
func vmRSS(b *testing.B, pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				b.Fatalf("VmRSS %q: %v", rest, err)
			}
			return kib << 10
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}
