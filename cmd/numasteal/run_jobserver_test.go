//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// envCLI makes the test binary act as the numasteal command; see
// TestJobserverHelperProcess.
const envCLI = "NUMASTEAL_TEST_CLI"

// TestJobserverHelperProcess is not a test: with $NUMASTEAL_TEST_CLI set it
// is the numasteal command, run by make or by a task of an in-process run as
//
//	TESTBINARY -test.run=TestJobserverHelperProcess -- run [flags] FILE
//
// so that the tests need no separately built binary.
func TestJobserverHelperProcess(t *testing.T) {
	if os.Getenv(envCLI) == "" {
		t.Skip("helper process only")
	}
	i := slices.Index(os.Args, "--")
	if i < 0 {
		fmt.Fprintln(os.Stderr, "helper: no -- in", os.Args)
		os.Exit(exitUsage)
	}
	os.Exit(cli(os.Args[i+1:], os.Stdout, os.Stderr))
}

// cliCommand is the shell command line that runs numasteal as a child.
func cliCommand() string {
	return envCLI + "=1 " + os.Args[0] + " -test.run=TestJobserverHelperProcess --"
}

// testdataPath returns the absolute path of testdata/jobserver/name.
func testdataPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "jobserver", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// requireMake returns GNU make's path, or skips (.ci/run installs it).
func requireMake(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make not installed (.ci/run installs it)")
	}
	return p
}

// recordLines returns n commands-file lines, each a 0.3 s job recording its
// times in out as prefixNN.
func recordLines(t *testing.T, out, prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "sh %s %s %s%02d\n", testdataPath(t, "record.sh"), out, prefix, i+1)
	}
	return b.String()
}

// interval is one recorded job's run, in nanoseconds.
type interval struct {
	name       string
	start, end int64
}

// readIntervals reads the NAME.start / NAME.end pairs record.sh left in dir.
func readIntervals(t *testing.T, dir string) []interval {
	t.Helper()
	starts, err := filepath.Glob(filepath.Join(dir, "*.start"))
	if err != nil {
		t.Fatal(err)
	}
	var ivs []interval
	for _, s := range starts {
		name := strings.TrimSuffix(filepath.Base(s), ".start")
		iv := interval{name: name}
		for _, f := range []struct {
			path string
			v    *int64
		}{{s, &iv.start}, {filepath.Join(dir, name+".end"), &iv.end}} {
			b, err := os.ReadFile(f.path)
			if err != nil {
				t.Fatal(err)
			}
			if *f.v, err = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err != nil {
				t.Fatalf("%s: %v", f.path, err)
			}
		}
		ivs = append(ivs, iv)
	}
	return ivs
}

// maxOverlap returns the most intervals that were open at one instant. An
// end and a start at the same nanosecond do not overlap.
func maxOverlap(ivs []interval) int {
	type event struct {
		t int64
		d int
	}
	var ev []event
	for _, iv := range ivs {
		ev = append(ev, event{iv.start, +1}, event{iv.end, -1})
	}
	slices.SortFunc(ev, func(a, b event) int {
		if a.t != b.t {
			return int(a.t - b.t)
		}
		return a.d - b.d // ends first
	})
	n, most := 0, 0
	for _, e := range ev {
		n += e.d
		most = max(most, n)
	}
	return most
}

// checkOverlap asserts that the jobs recorded in dir were want in number,
// never more than limit at once, and at least 2 at once at some point (the
// slots were shared, not serialised). The recorded times lie inside each
// job's real run, so the bound cannot be passed by measurement error.
func checkOverlap(t *testing.T, dir string, want, limit int) {
	t.Helper()
	ivs := readIntervals(t, dir)
	if len(ivs) != want {
		t.Fatalf("%d jobs recorded, want %d", len(ivs), want)
	}
	first, last := ivs[0].start, ivs[0].end
	for _, iv := range ivs {
		if iv.end < iv.start {
			t.Fatalf("job %s ends before it starts", iv.name)
		}
		first, last = min(first, iv.start), max(last, iv.end)
	}
	got := maxOverlap(ivs)
	t.Logf("%d jobs, at most %d at once (limit %d), %.2fs from first start to last end",
		len(ivs), got, limit, time.Duration(last-first).Seconds())
	if got > limit {
		t.Errorf("%d jobs ran at once, the jobserver allows %d", got, limit)
	}
	if got < 2 {
		t.Errorf("never more than %d job at once: the slots were not shared", got)
	}
}

// cleanEnv is the environment without make's variables, for a make the
// test starts.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEFILES", "GNUMAKEFLAGS":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// TestJobserverServesMake runs GNU make (12 recipes, no -j on its line) as
// a task of numasteal run -j 3 --jobserver, beside 4 tasks of numasteal's
// own: together they never run more than 3 jobs.
func TestJobserverServesMake(t *testing.T) {
	mk := requireMake(t)
	t.Setenv("MAKEFLAGS", "") // not under an outer make's jobserver
	dir, out := t.TempDir(), t.TempDir()
	makeErr := filepath.Join(dir, "make.stderr")
	cmds := writeFile(t, dir, "cmds.txt",
		fmt.Sprintf("%s -s -f %s OUT=%s REC=%s 2>%s\n", mk, testdataPath(t, "twelve.mk"), out, testdataPath(t, "record.sh"), makeErr)+
			recordLines(t, out, "ns", 4))
	code, stdout, stderr := runCmd(t, dir, "-j", "3", "--jobserver", "--progress", "none", cmds)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if b, err := os.ReadFile(makeErr); err != nil || len(b) != 0 || strings.Contains(stderr, "jobserver") {
		t.Errorf("make or numasteal complained (%v):\n%s\n%s", err, b, stderr)
	}
	checkOverlap(t, out, 16, 3)
	var recipes []interval
	for _, iv := range readIntervals(t, out) {
		if strings.HasPrefix(iv.name, "make") {
			recipes = append(recipes, iv)
		}
	}
	if n := maxOverlap(recipes); n < 2 {
		t.Errorf("make ran at most %d recipe at once: it did not get the jobserver", n)
	}
}

// TestJobserverUnderMake runs numasteal run -j 0 on 12 commands as a '+'
// recipe of make -j3, beside two recipes of make's own: at most 3 jobs at
// once in all.
func TestJobserverUnderMake(t *testing.T) {
	mk := requireMake(t)
	t.Parallel()
	dir, out := t.TempDir(), t.TempDir()
	cmds := writeFile(t, dir, "cmds.txt", recordLines(t, out, "ns", 12))
	cmd := exec.Command(mk, "-j3", "-s", "-f", testdataPath(t, "under.mk"),
		"NUMASTEAL="+cliCommand(), "CMDS="+cmds, "OUT="+out, "REC="+testdataPath(t, "record.sh"))
	cmd.Dir = dir // the helper's default history file lands there, if any
	cmd.Env = cleanEnv()
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), "12 tasks: 12 succeeded") || strings.Contains(string(b), "jobserver") {
		t.Errorf("numasteal under make:\n%s", b)
	}
	checkOverlap(t, out, 14, 3)
}

// TestJobserverFIFO serves a FIFO jobserver (numasteal run --jobserver
// --jobserver-style fifo -j 3) to a child numasteal run -j 0, the client on
// the other end, beside 4 tasks of the parent's own.
func TestJobserverFIFO(t *testing.T) {
	t.Setenv("MAKEFLAGS", "")
	dir, out := t.TempDir(), t.TempDir()
	child := writeFile(t, dir, "child.txt", recordLines(t, out, "child", 8)+
		"echo \"$MAKEFLAGS\" >"+filepath.Join(dir, "makeflags")+"\n")
	cmds := writeFile(t, dir, "cmds.txt",
		cliCommand()+" run --history= --progress=none -j 0 "+child+"\n"+recordLines(t, out, "parent", 4))
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the server makes its FIFO
	code, stdout, stderr := runCmd(t, dir, "-j", "3", "--jobserver", "--jobserver-style", "fifo", "--progress", "none", cmds)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	mf, err := os.ReadFile(filepath.Join(dir, "makeflags"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(mf), " -j3 --jobserver-auth=fifo:"+tmp) {
		t.Errorf("grandchild MAKEFLAGS %q, want the parent's FIFO under %s", mf, tmp)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("FIFO directory left behind: %v", left)
	}
	checkOverlap(t, out, 12, 3)
}

// TestJobserverRecoversKilledChild: a task's child takes 2 tokens and is
// killed (SIGKILL) holding them. numasteal counts them back once no child
// runs, reports it, and the build goes on with all its slots.
func TestJobserverRecoversKilledChild(t *testing.T) {
	t.Setenv("MAKEFLAGS", "")
	tests := []struct {
		name      string
		after     string // deps of the recording tasks
		take      int    // tokens the crashing child takes
		recovered string // the stderr report
		overlap   bool   // the recording tasks must run ≥ 2 at once
	}{
		// The crash runs alone; the 6 tasks after it need the 2 tokens back.
		{"alone", `"deps": ["crash"], `, 2, "recovered 2 ", true},
		// The crash runs beside the others: one slot short until the last
		// task ends (the build slows but does not stall), then recovered.
		{"beside", "", 1, "recovered 1 ", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, out := t.TempDir(), t.TempDir()
			took := filepath.Join(dir, "took")
			var b strings.Builder
			fmt.Fprintf(&b, `{"tasks": [{"id": "crash", "shell": "sh %s %d %s"}`, testdataPath(t, "crash.sh"), tt.take, took)
			for i := range 6 {
				fmt.Fprintf(&b, `, {"id": "r%d", %s"shell": "sh %s %s r%d"}`, i, tt.after, testdataPath(t, "record.sh"), out, i)
			}
			b.WriteString("]}\n")
			graph := writeFile(t, dir, "g.json", b.String())
			code, stdout, stderr := runCmd(t, dir, "-j", "3", "--jobserver", "--progress", "none", graph)
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if got, _ := os.ReadFile(took); strings.TrimSpace(string(got)) != strconv.Itoa(tt.take) {
				t.Fatalf("the crashing child took %q tokens, want %d", got, tt.take)
			}
			if !strings.Contains(stderr, "jobserver: "+tt.recovered) {
				t.Errorf("stderr lacks %q:\n%s", tt.recovered, stderr)
			}
			ivs := readIntervals(t, out)
			if len(ivs) != 6 {
				t.Fatalf("%d tasks recorded, want 6", len(ivs))
			}
			got := maxOverlap(ivs)
			t.Logf("%s; at most %d tasks at once", strings.TrimSpace(stderr), got)
			if got > 3 || (tt.overlap && got < 2) {
				t.Errorf("%d tasks at once after the crash, want 2..3", got)
			}
		})
	}
}

// jobserverPipe makes a pipe jobserver with tokens tokens in this process
// and returns its MAKEFLAGS and a function counting the tokens in it
// (FIONREAD), safe to call from any goroutine until the test ends.
func jobserverPipe(t *testing.T, jobs, tokens int) (makeflags string, inPipe func() (int, error), fds [2]int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	if _, err := unix.Write(p[1], bytes.Repeat([]byte{'+'}, tokens)); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(" -j%d --jobserver-auth=%d,%d", jobs, p[0], p[1]), func() (int, error) {
		return unix.IoctlGetInt(p[0], unix.TIOCINQ)
	}, p
}

// TestJobserverClientReturnsTokens: as a client (MAKEFLAGS names a pipe of
// this process with 2 tokens), numasteal runs tasks on its implicit slot
// and 2 tokens, and every token is back in the pipe after the run, whether
// the tasks succeeded, failed or were canceled (the SIGINT path: main
// cancels the context).
func TestJobserverClientReturnsTokens(t *testing.T) {
	tests := []struct {
		name   string
		cmds   string // "record": 6 jobs of record.sh
		cancel bool
		code   int
	}{
		{"succeed", "record", false, exitOK},
		{"fail", strings.Repeat("sleep 0.1; exit 1\n", 6), false, exitFail},
		{"cancel", strings.Repeat("sleep 30\n", 6), true, exitFail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mf, inPipe, _ := jobserverPipe(t, 3, 2)
			t.Setenv("MAKEFLAGS", mf)
			dir, out := t.TempDir(), t.TempDir()
			if tt.cmds == "record" {
				tt.cmds = recordLines(t, out, "ns", 6)
			}
			cmds := writeFile(t, dir, "cmds.txt", tt.cmds)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				// Cancel once the tasks hold both tokens.
				for tt.cancel && ctx.Err() == nil {
					if n, err := inPipe(); err != nil || n == 0 {
						cancel()
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
			var stdout, stderr bytes.Buffer
			code := dispatch(ctx, []string{"run", "--history=", "-k", "-j", "0", "--progress", "none", cmds}, &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout.String(), stderr.String())
			}
			cancel()
			<-done
			if n, err := inPipe(); n != 2 || err != nil {
				t.Errorf("%d tokens in the pipe after the run (%v), want 2", n, err)
			}
			if tt.cancel && !strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("stderr lacks the interruption:\n%s", stderr.String())
			}
			if tt.name == "succeed" {
				checkOverlap(t, out, 6, 3)
			}
			if strings.Contains(stderr.String(), "jobserver") {
				t.Errorf("stderr mentions the jobserver:\n%s", stderr.String())
			}
		})
	}
}

// TestJobserverClientSIGINT sends SIGINT to a numasteal run -j 0 (a child
// process) while its tasks hold every token of the test's jobserver: the
// tokens are back in the pipe when it has exited.
func TestJobserverClientSIGINT(t *testing.T) {
	t.Parallel()
	_, inPipe, fds := jobserverPipe(t, 3, 2) // the child gets it as fds 3, 4
	dir := t.TempDir()
	cmds := writeFile(t, dir, "cmds.txt", strings.Repeat("sleep 30\n", 6))
	cmd := exec.Command(os.Args[0], "-test.run=TestJobserverHelperProcess", "--",
		"run", "--history=", "--progress=none", "-j", "0", cmds)
	cmd.Env = cleanEnv(envCLI+"=1", "MAKEFLAGS= -j3 --jobserver-auth=3,4")
	passJobserver(t, cmd, fds)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		n, err := inPipe()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break // the tasks hold both tokens
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the child never took the tokens; stderr:\n%s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGINT) {
		t.Errorf("exit %d (%v), want %d (128+SIGINT); stderr:\n%s", code, err, 128+int(syscall.SIGINT), stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr lacks the interruption:\n%s", stderr.String())
	}
	if n, err := inPipe(); n != 2 || err != nil {
		t.Errorf("%d tokens in the pipe after SIGINT (%v), want 2", n, err)
	}
}

// TestJobserverUnusable: a jobserver MAKEFLAGS names but numasteal cannot
// use is reported once on stderr, and the run goes on with its own -j.
func TestJobserverUnusable(t *testing.T) {
	tests := []struct {
		makeflags string
		want      string
	}{
		{" -j3 --jobserver-auth=998,999", "--jobserver-auth=998,999 unusable: fstat fd 998: bad file descriptor"},
		{" -j3 --jobserver-fds=998,999", "--jobserver-fds=998,999 unusable: fstat fd 998"},
		{" -j3 --jobserver-auth=fifo:/nonexistent/numasteal-fifo", "unusable: stat /nonexistent/numasteal-fifo"},
		{" -j3 --jobserver-auth=3", "--jobserver-auth=3 unusable: parse"},
	}
	for _, tt := range tests {
		t.Run(tt.makeflags, func(t *testing.T) {
			t.Setenv("MAKEFLAGS", tt.makeflags)
			dir := t.TempDir()
			cmds := writeFile(t, dir, "cmds.txt", strings.Repeat("true\n", 4))
			code, stdout, stderr := runCmd(t, dir, "-j", "2", "--progress", "none", cmds)
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "; using -j 2") {
				t.Errorf("stderr %q, want %q and the fallback", stderr, tt.want)
			}
			if n := strings.Count(stderr, "unusable"); n != 1 {
				t.Errorf("reported %d times, want once:\n%s", n, stderr)
			}
		})
	}
}

// TestJobserverFlags checks the flag errors.
func TestJobserverFlags(t *testing.T) {
	dir := t.TempDir()
	cmds := writeFile(t, dir, "cmds.txt", "true\n")
	code, _, stderr := runCmd(t, dir, "--jobserver", "--jobserver-style", "socket", cmds)
	if code != exitUsage || !strings.Contains(stderr, `unknown --jobserver-style "socket" (want pipe or fifo)`) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// passJobserver gives cmd copies of the jobserver pipe's descriptors fds
// as its descriptors 3 and 4, closed when the test ends.
func passJobserver(t *testing.T, cmd *exec.Cmd, fds [2]int) {
	t.Helper()
	for _, fd := range fds {
		d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		f := os.NewFile(uintptr(d), "jobserver")
		t.Cleanup(func() { f.Close() })
		cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	}
}
