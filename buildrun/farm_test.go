package buildrun

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/farm"
)

// requireDistcc skips the test when distcc and distccd are missing and
// cannot be installed (.ci/run installs them).
func requireDistcc(t *testing.T) {
	t.Helper()
	have := func() bool {
		_, e1 := exec.LookPath("distcc")
		_, e2 := exec.LookPath("distccd")
		_, e3 := exec.LookPath("gcc")
		return e1 == nil && e2 == nil && e3 == nil
	}
	if have() {
		return
	}
	if os.Geteuid() == 0 {
		if _, err := exec.LookPath("apt-get"); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "-q", "--no-install-recommends", "distcc")
			cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Logf("apt-get install distcc: %v\n%s", err, out)
			}
		}
	}
	if !have() {
		t.Skip("distcc, distccd or gcc not installed and apt-get could not install them (.ci/run installs the distcc package)")
	}
}

// daemon is a distccd the test started on a loopback port.
type daemon struct {
	host farm.Host
	log  string
	cmd  *exec.Cmd
	once sync.Once
}

// stop kills the daemon and everything it started (its pre-forked
// workers and the compilers they run, which sit in process groups of
// their own), then reaps what was reparented here: the test process is a
// child subreaper once a runner with Subreaper has run.
func (d *daemon) stop() {
	d.once.Do(func() {
		// Freeze the daemon first, so that it forks no compiler after we
		// have looked. distccd gives each compiler a process group of its
		// own, which the kill of the daemon's group does not reach; those
		// groups are killed one by one. Orphans come to this process (the
		// runner made it a subreaper) and are reaped here.
		root := d.cmd.Process.Pid
		syscall.Kill(-root, syscall.SIGSTOP)
		pids := descendants(root)
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

// childrenIn returns this process's children (parent is self) whose
// process group is one of groups: the orphans of a killed daemon's
// groups.
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
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return -1
	}
	var ppid int
	fmt.Sscan(f[1], &ppid)
	return ppid
}

// procChildren maps each pid to its children's, from /proc.
func procChildren() map[int][]int {
	ents, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		if pp := parentOf(pid); pp > 0 {
			children[pp] = append(children[pp], pid)
		}
	}
	return children
}

// descendants returns the pids of root's descendants, from /proc.
func descendants(root int) []int {
	children := procChildren()
	var out []int
	for queue := []int{root}; len(queue) > 0; {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// jobs counts the compiles the daemon's log reports.
func (d *daemon) jobs(t *testing.T) int {
	data, err := os.ReadFile(d.log)
	if err != nil {
		t.Fatalf("daemon log: %v", err)
	}
	return strings.Count(string(data), "COMPILE_OK")
}

// freePort returns a loopback TCP port nobody listens on now.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// sharedDir returns a temporary directory everyone may write: distccd,
// started as root, drops to its own user and must still write its log,
// and the clients' DISTCC_DIR lives here too.
func sharedDir(t *testing.T) string {
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

// startDaemons starts n distccd daemons on loopback ports, each allowing
// 127.0.0.1 and taking slots jobs, and stops them (by process group) at
// the end of the test.
func startDaemons(t *testing.T, dir string, n, slots int) []*daemon {
	t.Helper()
	var ds []*daemon
	for i := range n {
		port := freePort(t)
		log := filepath.Join(dir, fmt.Sprintf("distccd-%d.log", i))
		if err := os.WriteFile(log, nil, 0o666); err != nil {
			t.Fatal(err)
		}
		os.Chmod(log, 0o666)
		cmd := exec.Command("distccd", "--daemon", "--no-detach", "--port", fmt.Sprint(port),
			"--listen", "127.0.0.1", "--allow", "127.0.0.1", "--jobs", fmt.Sprint(slots), "--log-file", log)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatalf("distccd: %v", err)
		}
		d := &daemon{host: farm.Host{Name: "127.0.0.1", Port: port, Slots: slots}, log: log, cmd: cmd}
		t.Cleanup(d.stop)
		ds = append(ds, d)
	}
	for _, d := range ds {
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := farm.Probe(context.Background(), d.host, time.Second); err == nil {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("distccd on port %d never answered: %v", d.host.Port, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return ds
}

// cProject writes a generated C project of n sources under dir (src/,
// inc/, obj/) and returns its build graph: n compiles, then a link.
func cProject(t *testing.T, dir string, n int) *buildgraph.Graph {
	t.Helper()
	for _, d := range []string{"src", "inc", "obj", "ref"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o777); err != nil {
			t.Fatal(err)
		}
	}
	hdr := "#ifndef COMMON_H\n#define COMMON_H\n#define SCALE 7\nstatic inline unsigned mix(unsigned x) { return x * 2654435761u ^ (x >> 13); }\n"
	for i := range n {
		hdr += fmt.Sprintf("unsigned f%d(unsigned);\n", i)
	}
	hdr += "#endif\n"
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	write("inc/common.h", hdr)
	g := &buildgraph.Graph{}
	var objs []string
	for i := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "#include \"common.h\"\n#include <string.h>\n")
		for k := range 12 {
			fmt.Fprintf(&b, "static unsigned g%d_%d(unsigned x) { unsigned a[%d]; for (unsigned j = 0; j < %d; j++) a[j] = mix(x + j * SCALE); unsigned s = 0; for (unsigned j = 0; j < %d; j++) s += a[j] ^ (s << 3); return s; }\n", i, k, 8+k, 8+k, 8+k)
		}
		fmt.Fprintf(&b, "unsigned f%d(unsigned x) {\n  unsigned s = x;\n", i)
		for k := range 12 {
			fmt.Fprintf(&b, "  s = g%d_%d(s) + %d;\n", i, k, k)
		}
		if i > 0 {
			fmt.Fprintf(&b, "  if (x & 1) s += f%d(x >> 1);\n", i-1)
		}
		fmt.Fprintf(&b, "  return s;\n}\n")
		if i == 0 {
			fmt.Fprintf(&b, "int main(void) { return (int)(f%d(12345) & 1); }\n", n-1)
		}
		write(fmt.Sprintf("src/f%d.c", i), b.String())
		obj := fmt.Sprintf("obj/f%d.o", i)
		objs = append(objs, obj)
		g.Tasks = append(g.Tasks, &buildgraph.Task{ID: obj, Cwd: dir,
			Cmd: []string{"gcc", "-O2", "-Wall", "-Iinc", "-MMD", "-c", fmt.Sprintf("src/f%d.c", i), "-o", obj}})
	}
	g.Tasks = append(g.Tasks, &buildgraph.Task{ID: "prog", Cwd: dir, Deps: objs,
		Cmd: append([]string{"gcc", "-o", "prog"}, objs...)})
	return g
}

// localObjects compiles the project's sources with plain gcc into ref/,
// the reference the farm's objects must equal byte for byte.
func localObjects(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		cmd := exec.Command("gcc", "-O2", "-Wall", "-Iinc", "-c", fmt.Sprintf("src/f%d.c", i), "-o", fmt.Sprintf("ref/f%d.o", i))
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("local gcc: %v\n%s", err, out)
		}
	}
}

// sameObjects fails for each object that differs from the reference.
func sameObjects(t *testing.T, dir string, n int) {
	t.Helper()
	for i := range n {
		a, errA := os.ReadFile(filepath.Join(dir, fmt.Sprintf("obj/f%d.o", i)))
		b, errB := os.ReadFile(filepath.Join(dir, fmt.Sprintf("ref/f%d.o", i)))
		if errA != nil || errB != nil {
			t.Errorf("f%d.o: %v %v", i, errA, errB)
			continue
		}
		if !bytes.Equal(a, b) {
			t.Errorf("obj/f%d.o differs from a local compile (%d vs %d bytes)", i, len(a), len(b))
		}
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("obj/f%d.d", i))); err != nil {
			t.Errorf("dependency file: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "prog")); err != nil {
		t.Errorf("link: %v", err)
	}
}

const farmProjectFiles = 24

// A build through a farm of three real distccd daemons gives the same
// objects as a local build, spreads its compiles over every daemon, and
// keeps the link local; the trace has one track per host.
func TestFarmBuildWithDistccd(t *testing.T) {
	requireDistcc(t)
	t.Cleanup(func() { requireNoChildren(t) }) // runs last, once the daemons are stopped
	shared := sharedDir(t)
	ds := startDaemons(t, shared, 3, 2)
	proj := filepath.Join(shared, "proj")
	g := cProject(t, proj, farmProjectFiles)
	localObjects(t, proj, farmProjectFiles)

	var hosts []farm.Host
	for _, d := range ds {
		hosts = append(hosts, d.host)
	}
	f := farm.New(hosts, farm.Config{})
	trace := buildgraph.NewTraceWriter(time.Now(), "farm test")
	rt := newRuntime(t)
	rep, err := Run(context.Background(), rt, g, opts(Options{
		Slots:   1, // one local slot, so the farm is needed
		Trace:   trace,
		Environ: append(os.Environ(), "DISTCC_DIR="+shared),
		Farm:    &FarmOptions{Farm: f, TempDir: shared},
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	for _, r := range rep.Failed() {
		msg, _ := r.Proc.Stderr.Tail(2000)
		t.Errorf("%s failed: %v\n%s", r.Task.ID, r.Proc.Err, msg)
	}
	if !rep.OK() {
		t.Fatalf("build failed: %v", rep.Counts)
	}
	sameObjects(t, proj, farmProjectFiles)

	remote := 0
	for i, s := range f.Stats(time.Now()) {
		logged := ds[i].jobs(t)
		t.Logf("%s: farm says %d jobs, %d failures, %.0f B/s; daemon log says %d compiles", s.Host.Addr(), s.Jobs, s.Failures, s.Speed, logged)
		if logged == 0 {
			t.Errorf("daemon %d (%s) compiled nothing: the jobs were not spread", i, s.Host.Addr())
		}
		if s.Jobs != logged || s.Failures != 0 || s.Running != 0 {
			t.Errorf("daemon %d: farm stats %+v, log %d compiles", i, s, logged)
		}
		if s.Jobs > 0 && s.Speed <= 0 {
			t.Errorf("daemon %d: no speed measured after %d jobs", i, s.Jobs)
		}
		remote += s.Jobs
	}
	if remote == 0 || remote >= farmProjectFiles {
		t.Errorf("%d of %d compiles went remote; want some but not all (the first runs locally)", remote, farmProjectFiles)
	}

	var buf bytes.Buffer
	if _, err := trace.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if !strings.Contains(buf.String(), `"name":"`+d.host.Addr()+`"`) {
			t.Errorf("trace has no track named %s", d.host.Addr())
		}
	}
}

// Killing a daemon in the middle of the build still gives a correct
// build: its jobs are retried locally, and the host is marked down.
func TestFarmDaemonDiesMidBuild(t *testing.T) {
	requireDistcc(t)
	t.Cleanup(func() { requireNoChildren(t) }) // runs last, once the daemons are stopped
	shared := sharedDir(t)
	ds := startDaemons(t, shared, 2, 2)
	proj := filepath.Join(shared, "proj")
	g := cProject(t, proj, farmProjectFiles)
	localObjects(t, proj, farmProjectFiles)

	f := farm.New([]farm.Host{ds[0].host, ds[1].host}, farm.Config{BackoffBase: time.Minute})
	killed := false
	progress := func(s Status) {
		// Kill daemon 0 while it holds a job, once a few tasks are done.
		if killed || s.Finished() < 4 {
			return
		}
		if st := f.Stats(time.Now()); st[0].Running > 0 {
			ds[0].stop()
			killed = true
		}
	}
	rt := newRuntime(t)
	rep, err := Run(context.Background(), rt, g, opts(Options{
		Slots:    1,
		Environ:  append(os.Environ(), "DISTCC_DIR="+shared),
		Farm:     &FarmOptions{Farm: f, TempDir: shared},
		Progress: progress,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer rep.Close()
	for _, r := range rep.Failed() {
		msg, _ := r.Proc.Stderr.Tail(2000)
		t.Errorf("%s failed: %v\n%s", r.Task.ID, r.Proc.Err, msg)
	}
	if !rep.OK() {
		t.Fatalf("build failed: %v", rep.Counts)
	}
	sameObjects(t, proj, farmProjectFiles)
	st := f.Stats(time.Now())
	for _, s := range st {
		t.Logf("%s", s)
	}
	if !killed {
		t.Skip("daemon 0 never held a job after the fourth task; nothing was killed")
	}
	if st[0].Failures == 0 || !st[0].Down || st[0].LastErr == "" {
		t.Errorf("killed host not marked down: %+v", st[0])
	}
	if st[1].Jobs == 0 {
		t.Errorf("surviving host got no jobs: %+v", st[1])
	}
}
