package buildrun

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/farm"
	"github.com/numasteal/numasteal/internal/distcctest"
)

// hostOf is d as a farm host.
func hostOf(d *distcctest.Daemon) farm.Host {
	return farm.Host{Name: "127.0.0.1", Port: d.Port, Slots: d.Slots}
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
	distcctest.Require(t)
	t.Cleanup(func() { requireNoChildren(t) }) // runs last, once the daemons are stopped
	shared := distcctest.SharedDir(t)
	ds := distcctest.Start(t, shared, 3, 2)
	proj := filepath.Join(shared, "proj")
	g := cProject(t, proj, farmProjectFiles)
	localObjects(t, proj, farmProjectFiles)

	var hosts []farm.Host
	for _, d := range ds {
		hosts = append(hosts, hostOf(d))
	}
	f := farm.New(hosts, farm.Config{})
	trace := buildgraph.NewTraceWriter(time.Now(), "farm test")
	rt := newRuntime(t)
	rep, err := Run(context.Background(), rt, g, opts(Options{
		Slots:   1, // one local slot, so the farm is needed
		Trace:   trace,
		Environ: append(os.Environ(), distcctest.ClientEnv(shared)...),
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
		logged := ds[i].Count(t, "COMPILE_OK")
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
		if !strings.Contains(buf.String(), `"name":"`+hostOf(d).Addr()+`"`) {
			t.Errorf("trace has no track named %s", hostOf(d).Addr())
		}
	}
}

// Killing a daemon in the middle of the build still gives a correct
// build: its jobs are retried locally, and the host is marked down.
func TestFarmDaemonDiesMidBuild(t *testing.T) {
	distcctest.Require(t)
	t.Cleanup(func() { requireNoChildren(t) }) // runs last, once the daemons are stopped
	shared := distcctest.SharedDir(t)
	ds := distcctest.Start(t, shared, 2, 2)
	proj := filepath.Join(shared, "proj")
	g := cProject(t, proj, farmProjectFiles)
	localObjects(t, proj, farmProjectFiles)

	f := farm.New([]farm.Host{hostOf(ds[0]), hostOf(ds[1])}, farm.Config{BackoffBase: time.Minute})
	killed := false
	progress := func(s Status) {
		// Kill daemon 0 while it holds a job, once a few tasks are done.
		if killed || s.Finished() < 4 {
			return
		}
		if st := f.Stats(time.Now()); st[0].Running > 0 {
			ds[0].Stop()
			killed = true
		}
	}
	rt := newRuntime(t)
	rep, err := Run(context.Background(), rt, g, opts(Options{
		Slots:    1,
		Environ:  append(os.Environ(), distcctest.ClientEnv(shared)...),
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
