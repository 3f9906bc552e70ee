package memory

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/numasteal/numasteal/topology"
)

// fixture returns the root of a tree under topology's testdata/memory:
// the cgroup layouts that topology.MemoryCgroups is tested on, with the
// files a Sample reads.
func fixture(name string) string {
	return filepath.Join("..", "topology", "testdata", "memory", name)
}

// copyFixture copies a fixture into a temporary directory, for a test
// that rewrites its files.
func copyFixture(t testing.TB, name string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(fixture(name))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// writeFile replaces a file of a fixture tree at once (a rename), so
// that a Sample taken meanwhile reads the old content or the new, never
// an empty file.
func writeFile(t testing.TB, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.WriteFile(p+".new", []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
}

const (
	kiB = 1 << 10
	miB = 1 << 20
	giB = 1 << 30
)

// sampleTests: what each fixture's files say, computed by hand from them
// (Available: the smallest of MemAvailable and each limited group's limit
// less its usage less its inactive file pages).
var sampleTests = []struct {
	name      string
	limit     int64
	limitFile string
	avail     int64
	memAvail  int64
	oom       int64
	pressure  Pressure
	psi       bool
}{
	// The job group: 1 GiB − (600 − 100 MiB) = 524 MiB; its parent is
	// tighter: 800 MiB − (700 − 150 MiB) = 250 MiB. OOM kills: the own
	// group's oom_control, 2 (the machine's vmstat, 3, counts others').
	{name: "v1", limit: 800 * miB, limitFile: "sys/fs/cgroup/memory/build/memory.limit_in_bytes",
		avail: 250 * miB, memAvail: 20 * giB, oom: 2,
		pressure: Pressure{Some10: 2.5, Full10: 0.75, SomeTotal: 1234567, FullTotal: 345678}, psi: true},
	// The scope: memory.max "max", memory.high 2 GiB − (1536 − 256 MiB) =
	// 768 MiB; the slice: 3 GiB − (2560 − 512 MiB) = 1 GiB. OOM kills:
	// the scope's memory.events, 2. PSI of the scope, not of the machine.
	{name: "v2", limit: 2 * giB, limitFile: "sys/fs/cgroup/user.slice/build.scope/memory.high",
		avail: 768 * miB, memAvail: 16 * giB, oom: 2,
		pressure: Pressure{Some10: 12.5, Full10: 3.25, SomeTotal: 4000000, FullTotal: 1000000}, psi: true},
	// v1's "no limit" everywhere: MemAvailable alone. The process is in
	// the v2 root: the machine's PSI.
	{name: "hybrid", avail: 23592960 * kiB, memAvail: 23592960 * kiB,
		pressure: Pressure{SomeTotal: 63798, FullTotal: 5890}, psi: true},
	// The container: 512 MiB − (400 − 16 MiB) = 128 MiB; the pod (the
	// mount's root): 1 GiB − (768 − 128 MiB) = 384 MiB. PSI of the
	// container's own group.
	{name: "namespace", limit: 512 * miB, limitFile: "sys/fs/cgroup/ctr/memory.max",
		avail: 128 * miB, memAvail: 16 * giB, oom: 1,
		pressure: Pressure{Some10: 5, Full10: 2, SomeTotal: 500, FullTotal: 200}, psi: true},
	// 2 GiB − (1 GiB − 256 MiB) = 1280 MiB. The process is at its
	// namespace's root: the machine's OOM kills (vmstat has none).
	{name: "namespace-v1", limit: 2 * giB, limitFile: "sys/fs/cgroup/memory/memory.limit_in_bytes",
		avail: 1280 * miB, memAvail: 16 * giB, oom: 0,
		pressure: Pressure{Some10: 0.5, Full10: 0.1, SomeTotal: 5000, FullTotal: 1000}, psi: true},
	// No memory controller: MemAvailable; the PSI of the process's v2
	// group, which needs no controller.
	{name: "nomemctl", avail: 8 * giB, memAvail: 8 * giB, oom: 2,
		pressure: Pressure{Some10: 0.75, Full10: 0.15, SomeTotal: 7500, FullTotal: 1500}, psi: true},
	// Linux 3.10: MemFree 4 GiB; the root's LONG_MAX is no limit; the
	// group: 3 GiB − (1 GiB − 128 MiB) = 2176 MiB; no OOM counters, no PSI.
	{name: "nopsi", limit: 3 * giB, limitFile: "sys/fs/cgroup/memory/build/memory.limit_in_bytes",
		avail: 2176 * miB, memAvail: 4 * giB},
}

func TestSampleFixtures(t *testing.T) {
	for _, tt := range sampleTests {
		t.Run(tt.name, func(t *testing.T) {
			root := fixture(tt.name)
			src, err := Open(root, 0)
			if err != nil {
				t.Fatal(err)
			}
			before := time.Now()
			s, err := src.Sample()
			if err != nil {
				t.Fatal(err)
			}
			// Without a tasks' cgroup the own limit is the limit.
			want := Sample{MemAvailable: tt.memAvail, Limit: tt.limit, OwnLimit: tt.limit, Available: tt.avail, At: s.At,
				Pressure: tt.pressure, HasPressure: tt.psi, OOMKills: tt.oom}
			if tt.limitFile != "" {
				want.LimitFile = filepath.Join(root, tt.limitFile)
			}
			if s != want {
				t.Errorf("Sample() =\n%+v\nwant\n%+v", s, want)
			}
			if s.At.Before(before) {
				t.Errorf("At %v is before the call (%v)", s.At, before)
			}
		})
	}
}

// TestSampleRereads: every sample reads the files again, so a limit set,
// raised or lifted while a build runs counts at once.
func TestSampleRereads(t *testing.T) {
	root := copyFixture(t, "v2")
	src, err := Open(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	const scope = "sys/fs/cgroup/user.slice/build.scope/"
	steps := []struct {
		file, content string
		limit, avail  int64
	}{
		{"", "", 2 * giB, 768 * miB},
		// memory.max below memory.high: the tighter of the two.
		{scope + "memory.max", "1879048192\n", 1792 * miB, 512 * miB},
		{scope + "memory.max", "max\n", 2 * giB, 768 * miB},
		// Both lifted: the slice's 3 GiB, 1 GiB left.
		{scope + "memory.high", "max\n", 3 * giB, 1 * giB},
		// The working set grows: 1.5 GiB less 256 MiB more.
		{scope + "memory.current", "1879048192\n", 3 * giB, 1 * giB},
		{"sys/fs/cgroup/user.slice/memory.current", "3221225472\n", 3 * giB, 512 * miB},
		// Usage beyond the limit (the kernel reclaims, or is about to
		// OOM-kill): nothing available, never negative.
		{"sys/fs/cgroup/user.slice/memory.current", "4294967296\n", 3 * giB, 0},
		{"proc/meminfo", "MemAvailable: 0 kB\n", 3 * giB, 0},
	}
	for _, st := range steps {
		if st.file != "" {
			writeFile(t, root, st.file, st.content)
		}
		s, err := src.Sample()
		if err != nil || s.Limit != st.limit || s.Available != st.avail {
			t.Errorf("after %s = %q: Limit %d Available %d, %v; want %d, %d", st.file, st.content, s.Limit, s.Available, err, st.limit, st.avail)
		}
	}
}

// TestSampleMalformed: a malformed file is an error naming it; an
// optional file that is missing leaves its field zero.
func TestSampleMalformed(t *testing.T) {
	const job = "sys/fs/cgroup/memory/build/job/"
	tests := []struct {
		file, content string
		err           string // the error's text after the root
	}{
		{"proc/meminfo", "MemAvailable: many kB\n", `/proc/meminfo: MemAvailable: "many": syntax error`},
		{"proc/meminfo", "MemFree: -1 kB\n", `/proc/meminfo: MemFree: "-1": syntax error`},
		{"proc/pressure/memory", "some avg10=x total=1\n", `/proc/pressure/memory: avg10 "x": syntax error`},
		{job + "memory.limit_in_bytes", "1G\n", `/` + job + `memory.limit_in_bytes: limit "1G" is not a byte count or "max": syntax error`},
		{job + "memory.usage_in_bytes", "max\n", `/` + job + `memory.usage_in_bytes: "max\n": usage is not a byte count: syntax error`},
		{job + "memory.stat", "total_inactive_file -4096\n", `/` + job + `memory.stat: total_inactive_file "-4096": syntax error`},
		{job + "memory.oom_control", "oom_kill ?\n", `/` + job + `memory.oom_control: oom_kill "?": syntax error`},
	}
	for _, tt := range tests {
		root := copyFixture(t, "v1")
		writeFile(t, root, tt.file, tt.content)
		src, err := Open(root, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, err = src.Sample()
		var fe *FileError
		if !errors.As(err, &fe) || !errors.Is(err, ErrSyntax) || errString(err) != root+tt.err {
			t.Errorf("%s = %q: error %v; want %q", tt.file, tt.content, err, root+tt.err)
		}
	}

	// A missing meminfo is an error; missing optional files are not.
	root := copyFixture(t, "v1")
	for _, f := range []string{"proc/pressure/memory", "proc/vmstat", job + "memory.stat", job + "memory.oom_control"} {
		if err := os.Remove(filepath.Join(root, f)); err != nil {
			t.Fatal(err)
		}
	}
	src, err := Open(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := src.Sample()
	// The job group without inactive file pages: 1 GiB − 600 MiB.
	if err != nil || s.HasPressure || s.OOMKills != 0 || s.Available != 250*miB || s.Limit != 800*miB {
		t.Errorf("without optional files: %+v, %v", s, err)
	}
	os.Remove(filepath.Join(root, "proc/meminfo"))
	if _, err := src.Sample(); !errors.Is(err, os.ErrNotExist) || !strings.Contains(errString(err), "proc/meminfo") {
		t.Errorf("without meminfo: %v", err)
	}
}

func TestOpenGroups(t *testing.T) {
	src, err := Open(fixture("v1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, g := range src.Groups() {
		dirs = append(dirs, g.Dir)
	}
	want := []string{"/sys/fs/cgroup/memory/build/job", "/sys/fs/cgroup/memory/build", "/sys/fs/cgroup/memory"}
	if !reflect.DeepEqual(dirs, want) {
		t.Errorf("Groups() = %v; want %v", dirs, want)
	}
	root := copyFixture(t, "v1")
	writeFile(t, root, "proc/self/cgroup", "4:memory\n")
	if _, err := Open(root, 0); err == nil || !strings.HasPrefix(err.Error(), "memory: topology: proc/self/cgroup") {
		t.Errorf("Open with a malformed proc/self/cgroup: %v", err)
	}
}

// TestSampleLive asserts only what this machine shows.
func TestSampleLive(t *testing.T) {
	src, err := Open("/", 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := src.Sample()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("groups %v: %+v", src.Groups(), s)
	if s.MemAvailable <= 0 || s.Available <= 0 || s.Available > s.MemAvailable || s.OOMKills < 0 {
		t.Errorf("Sample() = %+v", s)
	}
	if (s.Limit == 0) != (s.LimitFile == "") || (s.Limit > 0 && s.Available > s.Limit) {
		t.Errorf("Sample() = %+v", s)
	}
	if _, err := os.Stat("/proc/pressure/memory"); err == nil && !s.HasPressure {
		t.Errorf("this machine has PSI but the sample has none: %+v", s)
	}
}

// WithTasks adds the tasks' cgroup: its limit is the tightest, its
// working set counts, its OOM kills add to the own group's, and the
// Source it came from is unchanged. A removed tasks' cgroup counts none.
func TestWithTasks(t *testing.T) {
	root := copyFixture(t, "v1")
	rel := "sys/fs/cgroup/memory/build/numasteal-1"
	if err := os.Mkdir(filepath.Join(root, rel), 0o755); err != nil {
		t.Fatal(err)
	}
	for file, content := range map[string]string{
		"memory.limit_in_bytes": "209715200\n", // 200 MiB
		"memory.usage_in_bytes": "52428800\n",  // 50 MiB
		"memory.stat":           "cache 10485760\ntotal_inactive_file 10485760\n",
		"memory.oom_control":    "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n",
	} {
		writeFile(t, root, filepath.Join(rel, file), content)
	}
	src, err := Open(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	tasks := src.WithTasks(topology.MemoryCgroup{Dir: "/" + rel, Depth: -1})
	smp, err := tasks.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if smp.Limit != 200*miB || smp.LimitFile != filepath.Join(root, rel, "memory.limit_in_bytes") {
		t.Errorf("limit %d MiB (%s), want the tasks' 200 MiB", smp.Limit/miB, smp.LimitFile)
	}
	if smp.Available != 160*miB { // 200 − (50 − 10) MiB, below the parent's 250
		t.Errorf("available %d MiB, want 160", smp.Available/miB)
	}
	if smp.OOMKills != 2+3 {
		t.Errorf("%d OOM kills, want the own group's 2 and the tasks' 3", smp.OOMKills)
	}
	if own, _ := src.Sample(); own.Limit != 800*miB || own.OOMKills != 2 {
		t.Errorf("the Source WithTasks came from sees limit %d MiB, %d OOM kills; want 800 and 2", own.Limit/miB, own.OOMKills)
	}
	// The tasks' limit follows from the own groups' alone, not from itself.
	if smp.OwnLimit != 800*miB {
		t.Errorf("OwnLimit WithTasks = %d MiB, want the own 800 MiB", smp.OwnLimit/miB)
	}
	writeFile(t, root, "proc/self/statm", "10000 2560 300 100 0 2000 0\n")
	if got, err := tasks.TasksLimit(); got != TasksLimit(800*miB, 2560*int64(os.Getpagesize())) || err != nil {
		t.Errorf("TasksLimit WithTasks = %d MiB, %v; want that of the own 800 MiB", got/miB, err)
	}
	if err := os.RemoveAll(filepath.Join(root, rel)); err != nil {
		t.Fatal(err)
	}
	if n, err := tasks.OOMKills(); n != 2 || err != nil {
		t.Errorf("OOMKills with the tasks' cgroup gone = %d, %v; want 2", n, err)
	}
}

func TestTasksLimit(t *testing.T) {
	for _, c := range []struct{ limit, self, want int64 }{
		{limit: 0, self: 20 * miB, want: 0},                 // no limit: no tasks' cgroup
		{limit: 400 * miB, self: 14 * miB, want: 354 * miB}, // 400 − 14 − 32
		{limit: 16 * giB, self: 300 * miB, want: 16*giB - 600*miB},
		{limit: 100 * miB, self: 20 * miB, want: 0},               // a margin of 52 MiB: more than a quarter
		{limit: 200 * miB, self: 14 * miB, want: 154 * miB},       // a margin of 46 MiB: less than a quarter
		{limit: 8 * giB, self: 600 * miB, want: 8*giB - 1200*miB}, // twice what it holds
		{limit: 400 * miB, self: -1, want: 368 * miB},
	} {
		if got := TasksLimit(c.limit, c.self); got != c.want {
			t.Errorf("TasksLimit(%d MiB, %d MiB) = %d MiB, want %d MiB", c.limit/miB, c.self/miB, got/miB, c.want/miB)
		}
	}
	root := copyFixture(t, "v1")
	writeFile(t, root, "proc/self/statm", "10000 2560 300 100 0 2000 0\n")
	src, err := Open(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.TasksLimit()
	if want := TasksLimit(800*miB, 2560*int64(os.Getpagesize())); got != want || err != nil {
		t.Errorf("Source.TasksLimit = %d MiB, %v; want %d MiB", got/miB, err, want/miB)
	}
	writeFile(t, root, "proc/self/statm", "garbage\n")
	if _, err := src.TasksLimit(); !errors.Is(err, ErrSyntax) {
		t.Errorf("Source.TasksLimit of a bad statm: %v, want ErrSyntax", err)
	}
}

// A v2 tasks' cgroup below the own one (the process moved to a leaf):
// the own cgroup's memory.events counts its kills already.
func TestWithTasksBelowOwnV2(t *testing.T) {
	root := copyFixture(t, "v2")
	src, err := Open(root, 0)
	if err != nil {
		t.Fatal(err)
	}
	own := src.Groups()[0].Dir
	rel := filepath.Join(own, "numasteal-1")
	if err := os.Mkdir(filepath.Join(root, rel), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, filepath.Join(rel, "memory.max"), "max\n")
	writeFile(t, root, filepath.Join(rel, "memory.events"), "low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n")
	before, err := src.OOMKills()
	if err != nil {
		t.Fatal(err)
	}
	after, err := src.WithTasks(topology.MemoryCgroup{Dir: rel, V2: true, Depth: -1}).OOMKills()
	if after != before || err != nil {
		t.Errorf("OOMKills with a v2 tasks' cgroup below the own one = %d, %v; want the own count %d", after, err, before)
	}
}
