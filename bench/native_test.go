package bench

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/launch"
)

func TestParseNativeSpec(t *testing.T) {
	tests := []struct {
		in      string
		want    NativeSpec
		native  bool
		errPart string
	}{
		{in: "linux:tinyconfig", want: NativeSpec{NativeLinux, "tinyconfig"}, native: true},
		{in: "debian-cmake:libzstd", want: NativeSpec{NativeDebianCMake, "libzstd"}, native: true},
		{in: "debian-cmake:lua5.4", want: NativeSpec{NativeDebianCMake, "lua5.4"}, native: true},
		{in: "linux", native: true, errPart: "tinyconfig only"},
		{in: "linux:defconfig", native: true, errPart: "tinyconfig only"},
		{in: "debian-cmake:", native: true, errPart: "name a Debian source package"},
		{in: "debian-cmake:Zstd", native: true, errPart: "name a Debian source package"},
		{in: "debian-cmake:-x", native: true, errPart: "name a Debian source package"},
		{in: "debian:libzstd", errPart: "not a native build"},
		{in: "cgen", errPart: "not a native build"},
		{in: "tarball:x", errPart: "not a native build"},
	}
	for _, tt := range tests {
		if got := IsNativeCorpus(tt.in); got != tt.native {
			t.Errorf("IsNativeCorpus(%q) = %v, want %v", tt.in, got, tt.native)
		}
		got, err := ParseNativeSpec(tt.in)
		switch {
		case tt.errPart == "" && err != nil:
			t.Errorf("ParseNativeSpec(%q): %v", tt.in, err)
		case tt.errPart != "" && (err == nil || !strings.Contains(err.Error(), tt.errPart)):
			t.Errorf("ParseNativeSpec(%q) = %v, %v; want an error with %q", tt.in, got, err, tt.errPart)
		case tt.errPart == "" && (got != tt.want || got.String() != tt.in):
			t.Errorf("ParseNativeSpec(%q) = %+v (%s), want %+v", tt.in, got, got, tt.want)
		}
	}
}

// args returns the argvs of a contender's builds and cleans.
func args(c nativeContender) (builds, cleans [][]string) {
	for _, b := range c.builds {
		builds = append(builds, b.build.Args)
		cleans = append(cleans, b.clean.Args)
	}
	return builds, cleans
}

func TestMakeContenders(t *testing.T) {
	tree := func(name string) *makeTree {
		return &makeTree{dir: "/src", vars: []string{"O=/out/" + name}, products: []string{"/out/" + name + "/vmlinux"}}
	}
	s := makeSetup{plain: *tree("plain"), launch: *tree("launch"), launcher: "/bin/numasteal-launch", numasteal: "/bin/numasteal", cpus: 2}
	cc := []string{"CC=/bin/numasteal-launch gcc", "HOSTCC=/bin/numasteal-launch gcc"}
	plain := func(name string, j ...string) []string {
		return append([]string{"make", "-C", "/src", "O=/out/" + name, "-j"}, j...)
	}
	launched := func(name string) []string {
		return append(append([]string{"/bin/numasteal", "exec", "make", "-C", "/src", "O=/out/" + name}, cc...), "-j")
	}
	clean := func(name string) []string { return []string{"make", "-C", "/src", "O=/out/" + name, "clean"} }
	want := []struct {
		key, jobs      string
		j              int
		launcher       bool
		builds, cleans [][]string
	}{
		{RowMake2x, "2x", 4, false, [][]string{plain("plain", "4")}, [][]string{clean("plain")}},
		{RowMakeMax, "max", 0, false, [][]string{plain("plain")}, [][]string{clean("plain")}},
		{RowMakeMaxLauncher, "max", 0, true, [][]string{launched("launch")}, [][]string{clean("launch")}},
		{RowPairMake2x, "2x", 4, false, [][]string{plain("plain", "4"), plain("plain-b", "4")}, [][]string{clean("plain"), clean("plain-b")}},
		{RowPairMakeLauncher, "max", 0, true, [][]string{launched("launch"), launched("launch-b")}, [][]string{clean("launch"), clean("launch-b")}},
	}
	cs, rs := makeContenders(s)
	if len(cs) != 3 || len(rs) != 3 {
		t.Fatalf("without pairs: %d contenders, %d ratios; want 3 and 3", len(cs), len(rs))
	}
	s.plainB, s.launchB = tree("plain-b"), tree("launch-b")
	cs, rs = makeContenders(s)
	if len(cs) != len(want) || len(rs) != 4 {
		t.Fatalf("%d contenders, %d ratios; want %d and 4", len(cs), len(rs), len(want))
	}
	for i, w := range want {
		c := cs[i]
		builds, cleans := args(c)
		if c.key != w.key || c.runner != RunnerMake || c.jobs != w.jobs || c.j != w.j || c.launcher != w.launcher ||
			!reflect.DeepEqual(builds, w.builds) || !reflect.DeepEqual(cleans, w.cleans) {
			t.Errorf("contender %d:\n got %s %s %s %d %v %q %q\nwant %s make %s %d %v %q %q", i,
				c.key, c.runner, c.jobs, c.j, c.launcher, builds, cleans, w.key, w.jobs, w.j, w.launcher, w.builds, w.cleans)
		}
	}
	// The launcher's variables are added to a copy: the tree's stay as
	// they were.
	if !reflect.DeepEqual(s.launch.vars, []string{"O=/out/launch"}) {
		t.Errorf("the launch tree's vars became %q", s.launch.vars)
	}
	wantRatios := []nativeRatioSpec{
		{"launcher max / make 2x (elapsed)", RowMakeMaxLauncher, RowMake2x, false, 1.03},
		{"launcher max / make max (elapsed)", RowMakeMaxLauncher, RowMakeMax, false, 0},
		{"launcher max / make 2x (user+sys)", RowMakeMaxLauncher, RowMake2x, true, 0},
		{"two builds: launcher max / make 2x (elapsed, later end)", RowPairMakeLauncher, RowPairMake2x, false, 0.95},
	}
	if !reflect.DeepEqual(rs, wantRatios) {
		t.Errorf("ratios\n got %+v\nwant %+v", rs, wantRatios)
	}
}

func TestNinjaContenders(t *testing.T) {
	cs, rs := ninjaContenders(ninjaSetup{plain: "/b/plain", launch: "/b/launch", plainB: "/b/plain-b", launchB: "/b/launch-b"})
	want := []struct {
		key, jobs string
		j         int
		launcher  bool
		builds    [][]string
	}{
		{RowNinja, "default", -1, false, [][]string{{"ninja", "-C", "/b/plain"}}},
		{RowNinjaLauncher, "1000", 1000, true, [][]string{{"ninja", "-C", "/b/launch", "-j", "1000"}}},
		{RowPairNinja, "default", -1, false, [][]string{{"ninja", "-C", "/b/plain"}, {"ninja", "-C", "/b/plain-b"}}},
		{RowPairNinjaLaunch, "1000", 1000, true, [][]string{{"ninja", "-C", "/b/launch", "-j", "1000"}, {"ninja", "-C", "/b/launch-b", "-j", "1000"}}},
	}
	if len(cs) != len(want) || len(rs) != 3 {
		t.Fatalf("%d contenders, %d ratios; want %d and 3", len(cs), len(rs), len(want))
	}
	for i, w := range want {
		c := cs[i]
		builds, cleans := args(c)
		if c.key != w.key || c.runner != RunnerNinja || c.jobs != w.jobs || c.j != w.j || c.launcher != w.launcher || !reflect.DeepEqual(builds, w.builds) {
			t.Errorf("contender %d: got %s %s %d %v %q, want %s %s %d %v %q", i, c.key, c.jobs, c.j, c.launcher, builds, w.key, w.jobs, w.j, w.launcher, w.builds)
		}
		for k, cl := range cleans {
			if want := []string{"ninja", "-C", w.builds[k][2], "-t", "clean"}; !reflect.DeepEqual(cl, want) {
				t.Errorf("contender %d clean %d: %q, want %q", i, k, cl, want)
			}
		}
	}
	if rs[0].num != RowNinjaLauncher || rs[0].den != RowNinja || rs[0].limit != 1.03 || rs[2].limit != 0.95 {
		t.Errorf("ratios %+v", rs)
	}
}

func TestConfigureCmds(t *testing.T) {
	tree := makeTree{dir: "/src", vars: []string{"O=/out/launch"}}
	got := linuxConfigureCmds(tree, "/bin/L", 2)
	want := [][]string{
		{"make", "-C", "/src", "O=/out/launch", "CC=/bin/L gcc", "HOSTCC=/bin/L gcc", "tinyconfig"},
		{"make", "-C", "/src", "O=/out/launch", "CC=/bin/L gcc", "HOSTCC=/bin/L gcc", "-j", "4", "prepare"},
	}
	if len(got) != 2 || !reflect.DeepEqual(got[0].Args, want[0]) || !reflect.DeepEqual(got[1].Args, want[1]) {
		t.Errorf("linuxConfigureCmds = %+v, want %q", got, want)
	}
	if got := linuxConfigureCmds(tree, "", 1)[0].Args; !reflect.DeepEqual(got, []string{"make", "-C", "/src", "O=/out/launch", "tinyconfig"}) {
		t.Errorf("plain tinyconfig: %q", got)
	}
	c := cmakeConfigureCmd("/s/build/cmake", "/w/build-launch", "/bin/L")
	wantC := []string{"cmake", "-G", "Ninja", "-S", "/s/build/cmake", "-B", "/w/build-launch", "-DCMAKE_BUILD_TYPE=Release",
		"-DCMAKE_C_COMPILER_LAUNCHER=/bin/L", "-DCMAKE_CXX_COMPILER_LAUNCHER=/bin/L"}
	if !reflect.DeepEqual(c.Args, wantC) {
		t.Errorf("cmakeConfigureCmd = %q, want %q", c.Args, wantC)
	}
	if got := cmakeConfigureCmd("/p", "/b", "").Args; len(got) != 8 {
		t.Errorf("plain cmake configure: %q", got)
	}
	ds := cmakeBuildDirs(ninjaSetup{plain: "p", launch: "l"}, "/bin/L")
	if !reflect.DeepEqual(ds, []cmakeBuildDir{{"p", ""}, {"l", "/bin/L"}}) {
		t.Errorf("cmakeBuildDirs = %+v", ds)
	}
}

func TestNativeRatios(t *testing.T) {
	rows := []NativeRow{
		{Row: RowMake2x, ElapsedS: 100, UserS: 150, SysS: 30},
		{Row: RowMakeMax, ElapsedS: 110},
		{Row: RowMakeMaxLauncher, ElapsedS: 102, UserS: 155, SysS: 31, DaemonS: 2},
		{Row: RowPairMake2x, ElapsedS: 0},
		{Row: RowPairMakeLauncher, ElapsedS: 150},
	}
	specs := []nativeRatioSpec{
		{"a", RowMakeMaxLauncher, RowMake2x, false, 1.03},
		{"b", RowMakeMaxLauncher, RowMakeMax, false, 0},
		{"c", RowMakeMaxLauncher, RowMake2x, true, 0},
		{"d", RowPairMakeLauncher, RowPairMake2x, false, 0.95}, // denominator 0: left out
		{"e", RowNinjaLauncher, RowNinja, false, 1.03},         // rows that did not run
		{"f", RowMakeMax, RowMake2x, false, 1.03},
	}
	got := nativeRatios(specs, rows)
	want := []NativeRatio{
		{Name: "a", Ratio: 1.02, Limit: 1.03, Verdict: "met"},
		{Name: "b", Ratio: 102.0 / 110},
		{Name: "c", Ratio: 188.0 / 180},
		{Name: "f", Ratio: 1.1, Limit: 1.03, Verdict: "missed"},
	}
	if len(got) != len(want) {
		t.Fatalf("nativeRatios = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name != w.Name || math.Abs(g.Ratio-w.Ratio) > 1e-9 || g.Limit != w.Limit || g.Verdict != w.Verdict {
			t.Errorf("ratio %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestNativeRow(t *testing.T) {
	c := nativeContender{key: RowMakeMaxLauncher, runner: RunnerMake, jobs: "max", launcher: true,
		builds: []nativeBuild{{build: nativeCmd{Args: []string{"make", "-C", "/src", "-j"}}}}}
	runs := []nativeMeasure{
		{buildMeasure{elapsed: 10, user: 15, sys: 3}, 2, 100},
		{buildMeasure{elapsed: 12, user: 16, sys: 4}, 1, 100},
		{buildMeasure{elapsed: 11, user: 14, sys: 5}, 3, 100},
	}
	got := nativeRow(c, runs)
	want := NativeRow{Row: RowMakeMaxLauncher, Runner: RunnerMake, Jobs: "max", Launcher: true, Builds: 1,
		Command: "make -C /src -j", ElapsedS: 11, UserS: 15, SysS: 4, DaemonS: 2, DaemonJobs: 100, CPUPct: 200, Runs: 3}
	if got != want {
		t.Errorf("nativeRow =\n %+v, want\n %+v", got, want)
	}
}

func TestNativeRowLabel(t *testing.T) {
	for _, tt := range []struct {
		row  NativeRow
		want string
	}{
		{NativeRow{Runner: "make", J: 4, Builds: 1}, "make -j 4"},
		{NativeRow{Runner: "make", J: 0, Launcher: true, Builds: 1}, "numasteal exec make -j +launcher"},
		{NativeRow{Runner: "ninja", J: -1, Builds: 2}, "2 x ninja"},
		{NativeRow{Runner: "ninja", J: 1000, Launcher: true, Builds: 2}, "2 x ninja -j 1000 +launcher"},
	} {
		if got := nativeRowLabel(tt.row); got != tt.want {
			t.Errorf("nativeRowLabel(%+v) = %q, want %q", tt.row, got, tt.want)
		}
	}
}

func TestWriteNativeTable(t *testing.T) {
	r := &NativeResult{Corpus: "linux:tinyconfig", CPUs: 2, Reps: 3, Launcher: "/bin/L",
		Rows:   []NativeRow{{Row: RowMake2x, Runner: "make", J: 4, Builds: 1, ElapsedS: 100}, {Row: RowMakeMaxLauncher, Runner: "make", Launcher: true, Builds: 1, ElapsedS: 101, DaemonS: 1.5}},
		Ratios: []NativeRatio{{Name: "launcher max / make 2x (elapsed)", Ratio: 1.01, Limit: 1.03, Verdict: "met"}, {Name: "launcher max / make 2x (user+sys)", Ratio: 1.2}},
	}
	var b bytes.Buffer
	WriteNativeTable(&b, r)
	for _, want := range []string{"linux:tinyconfig, native build, 2 CPUs, median of 3 runs", "launcher: /bin/L",
		"make -j 4", "numasteal exec make -j +launcher", "1.50", "1.010 (target <= 1.03) MET", "(user+sys)                          1.200\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestParseProcStatCPU(t *testing.T) {
	for _, tt := range []struct {
		in        string
		user, sys float64
		ok        bool
	}{
		{"1234 (numasteal) S 1 1234 1234 0 -1 4194560 1016 0 0 0 250 37 0 0 20 0 7 0 123 0 0\n", 2.5, 0.37, true},
		{"99 (a) b) (c) R 1 2 3 4 5 6 7 8 9 10 5 6 0 0\n", 0.05, 0.06, true},
		{"99 (a) R 1 2 3\n", 0, 0, false},
		{"no name at all", 0, 0, false},
		{"1 (x) S 1 2 3 4 5 6 7 8 9 10 u 6 0\n", 0, 0, false},
	} {
		user, sys, err := parseProcStatCPU([]byte(tt.in))
		if (err == nil) != tt.ok || math.Abs(user-tt.user) > 1e-9 || math.Abs(sys-tt.sys) > 1e-9 {
			t.Errorf("parseProcStatCPU(%q) = %v, %v, %v; want %v, %v, ok %v", tt.in, user, sys, err, tt.user, tt.sys, tt.ok)
		}
	}
}

func TestNativeEnv(t *testing.T) {
	got := nativeEnv([]string{"PATH=/bin", "NUMASTEAL_SLOT=3", "NUMASTEAL_LAUNCH=off", "MAKEFLAGS=-j4 --jobserver-auth=3,4", "MAKELEVEL=1", "HOME=/root"},
		[]string{"NUMASTEAL_SOCKET=/s"})
	want := []string{"PATH=/bin", "HOME=/root", "NUMASTEAL_SOCKET=/s"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("nativeEnv = %q, want %q", got, want)
	}
}

func TestNativeCheck(t *testing.T) {
	dir := t.TempDir()
	ns := filepath.Join(dir, "numasteal")
	if err := os.WriteFile(ns, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		o       NativeOptions
		errPart string
	}{
		{NativeOptions{Spec: "linux:allyesconfig", Numasteal: ns}, "tinyconfig only"},
		{NativeOptions{Spec: "linux:tinyconfig", Numasteal: filepath.Join(dir, "none")}, "the numasteal binary"},
		{NativeOptions{Spec: "linux:tinyconfig", Numasteal: ns}, "numasteal-launch beside " + ns},
		{NativeOptions{Spec: "debian-cmake:libzstd", Numasteal: ns, Launcher: filepath.Join(dir, "L")}, "the launcher: stat"},
		{NativeOptions{Spec: "debian-cmake:libzstd", Numasteal: ns, Launcher: dir}, "is not an executable file"},
	} {
		err := tt.o.Check()
		if err == nil || !strings.Contains(err.Error(), tt.errPart) {
			t.Errorf("Check(%+v) = %v, want an error with %q", tt.o, err, tt.errPart)
		}
	}
	spaced := filepath.Join(dir, "a b")
	if err := os.WriteFile(spaced, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := (NativeOptions{Spec: "linux:tinyconfig", Numasteal: ns, Launcher: spaced}).Check(); err == nil || !strings.Contains(err.Error(), "blanks") {
		t.Errorf("a launcher path with a blank: %v", err)
	}
}

func TestStopDaemonNone(t *testing.T) {
	p := launch.PathsFromEnv(func(k string) string {
		if k == "NUMASTEAL_SOCKET" {
			return filepath.Join(t.TempDir(), "sock")
		}
		return ""
	})
	// No lock file: no daemon ever ran.
	if use, err := stopDaemon(p); err != nil || use.ran {
		t.Errorf("no lock file: %+v, %v", use, err)
	}
	// A lock file that nobody holds: the daemon is gone; its pid, stale,
	// is not signalled.
	if err := os.WriteFile(p.Lock, []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if use, err := stopDaemon(p); err != nil || use.ran {
		t.Errorf("a lock nobody holds: %+v, %v", use, err)
	}
}

func TestDaemonSessionSocketLength(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 90))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := newDaemonSession(long, "/bin/numasteal"); err == nil || !strings.Contains(err.Error(), "shorter work directory") {
		t.Errorf("newDaemonSession under a long path: %v", err)
	}
	if ents, _ := os.ReadDir(long); len(ents) != 0 {
		t.Errorf("the refused session left %v", ents)
	}
	s, err := newDaemonSession(t.TempDir(), "/bin/numasteal")
	if err != nil {
		t.Fatal(err)
	}
	p1, p2 := s.next(), s.next()
	if p1.Socket == p2.Socket || filepath.Dir(p1.Socket) != s.dir || p1.Lock != p1.Socket+".lock" {
		t.Errorf("sockets %+v and %+v", p1, p2)
	}
	env := strings.Join(s.env(p1), " ")
	if !strings.Contains(env, "NUMASTEAL_SOCKET="+p1.Socket) || !strings.Contains(env, "NUMASTEAL_BIN=/bin/numasteal") || !strings.Contains(env, "--idle "+daemonIdle) {
		t.Errorf("env %s", env)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("close left %s: %v", s.dir, err)
	}
}
