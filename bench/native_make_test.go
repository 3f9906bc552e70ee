package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tinyMakefile builds prog from four C files with $(CC), as the kernel's
// Makefiles do, so CC="LAUNCHER gcc" puts the launcher in front of every
// compile and the link.
// With HANG=FILE, the build touches FILE after the link and hangs.
const tinyMakefile = `OBJS = a.o b.o c.o main.o
prog: $(OBJS)
	$(CC) -o $@ $(OBJS)
	$(if $(HANG),touch $(HANG) && exec sleep 599.5)
%.o: %.c
	$(CC) -c -o $@ $<
clean:
	rm -f $(OBJS) prog
.PHONY: clean
`

// writeTinyProject writes the make project of TestNativeMakeRows in dir.
func writeTinyProject(t *testing.T, dir string) makeTree {
	t.Helper()
	files := map[string]string{
		"Makefile": tinyMakefile,
		"a.c":      "int a(void) { return 1; }\n",
		"b.c":      "int b(void) { return 2; }\n",
		"c.c":      "int c(void) { return 3; }\n",
		"main.c":   "int a(void), b(void), c(void);\nint main(void) { return a() + b() + c() - 6; }\n",
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return makeTree{dir: dir, products: []string{filepath.Join(dir, "prog")}}
}

// TestNativeMakeRows runs the make rows, pairs included, of a four-file
// make project through the real launcher and daemon, once each: every
// launcher run must have gone through a daemon, which must be gone
// afterwards, as must the session's directory. Then it cancels a
// launcher build that hangs after its daemon started: the build's
// processes and the daemon must be gone too.
func TestNativeMakeRows(t *testing.T) {
	for _, p := range []string{"make", "gcc", "go"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not installed (.ci/run installs make and gcc)", p)
		}
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "github.com/numasteal/numasteal/cmd/numasteal", "github.com/numasteal/numasteal/cmd/numasteal-launch")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the binaries: %v\n%s", err, out)
	}
	numasteal := filepath.Join(bin, "numasteal")
	work := t.TempDir()
	plainB, launchB := writeTinyProject(t, filepath.Join(work, "plain-b")), writeTinyProject(t, filepath.Join(work, "launch-b"))
	s := makeSetup{
		plain: writeTinyProject(t, filepath.Join(work, "plain")), launch: writeTinyProject(t, filepath.Join(work, "launch")),
		plainB: &plainB, launchB: &launchB, launcher: filepath.Join(bin, "numasteal-launch"), numasteal: numasteal, cpus: 1,
	}
	cs, rs := makeContenders(s)
	sess, err := newDaemonSession(work, numasteal)
	if err != nil {
		t.Fatal(err)
	}
	res, err := runNativePlan(context.Background(), &nativePlan{name: "tiny", contenders: cs, ratios: rs}, NativeOptions{Reps: 1, CPUs: 1, Launcher: s.launcher}, sess)
	if cerr := sess.close(); cerr != nil {
		t.Errorf("closing the session: %v", cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	WriteNativeTable(&table, res)
	t.Log("\n" + table.String())
	// Four compiles and a link a build.
	wantJobs := map[string]float64{RowMakeMaxLauncher: 5, RowPairMakeLauncher: 10}
	for _, key := range []string{RowMake2x, RowMakeMax, RowMakeMaxLauncher, RowPairMake2x, RowPairMakeLauncher} {
		row, ok := res.Row(key)
		if !ok {
			t.Errorf("no row %s in %+v", key, res.Rows)
			continue
		}
		if row.Runs != 1 || row.ElapsedS <= 0 || row.UserS+row.SysS <= 0 {
			t.Errorf("row %+v: want one run with positive elapsed and user+sys", row)
		}
		if row.DaemonJobs != wantJobs[key] {
			t.Errorf("row %s: the daemon admitted %v jobs, want %v", key, row.DaemonJobs, wantJobs[key])
		}
	}
	if len(res.Ratios) != len(rs) {
		t.Errorf("ratios %+v, want %d", res.Ratios, len(rs))
	}
	if _, err := os.Stat(sess.dir); !os.IsNotExist(err) {
		t.Errorf("the session directory %s is still there: %v", sess.dir, err)
	}
	if pids := serving(t, numasteal); len(pids) > 0 {
		t.Errorf("daemons of %s outlived the benchmark: pids %v", numasteal, pids)
	}

	t.Run("cancelled", func(t *testing.T) {
		hang := writeTinyProject(t, filepath.Join(work, "hang"))
		started := filepath.Join(work, "hang-started")
		hang.vars = []string{"HANG=" + started}
		c := nativeContender{key: RowMakeMaxLauncher, launcher: true, builds: []nativeBuild{makeBuild(hang, 0, s.launcher, s.numasteal)}}
		sess, err := newDaemonSession(work, numasteal)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := runNativeContender(ctx, c, sess)
			done <- err
		}()
		for {
			if _, err := os.Stat(started); err == nil {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("the hanging build ended: %v", err)
			case <-time.After(10 * time.Millisecond):
			}
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled run: %v, want context.Canceled", err)
		}
		if err := sess.close(); err != nil {
			t.Errorf("closing the session: %v", err)
		}
		if pids := serving(t, numasteal); len(pids) > 0 {
			t.Errorf("daemons of %s outlived the cancelled benchmark: pids %v", numasteal, pids)
		}
		if pids := running(t, "sleep", "599.5"); len(pids) > 0 {
			t.Errorf("the cancelled build's sleep outlived it: pids %v", pids)
		}
	})
}

// serving returns the pids of the processes running "numasteal serve" of
// the binary numasteal.
func serving(t *testing.T, numasteal string) []string {
	t.Helper()
	return running(t, numasteal, "serve")
}

// running returns the pids of the processes whose command line is args.
func running(t *testing.T, args ...string) []string {
	t.Helper()
	want := []byte(strings.Join(args, "\x00") + "\x00")
	cmdlines, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, f := range cmdlines {
		data, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		if bytes.HasPrefix(data, want) {
			pids = append(pids, strings.Split(f, "/")[2])
		}
	}
	return pids
}
