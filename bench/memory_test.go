package bench

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/numasteal/numasteal/internal/membuild"
)

// TestMemoryRows runs the memory benchmark at a tiny size, once: three
// compiles of 60 MiB in a 100 MiB cgroup, so that two at once do not
// fit. Plain make -j1 builds everything; every row accounts for each
// object (built, or a failed job of make -k), every failed job is an OOM
// kill; the launcher rows build everything with no failed job, through a
// daemon, and so do the numasteal run rows; and the cgroup, the daemons, the work directory and every
// goroutine are gone afterwards.
func TestMemoryRows(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, p := range []string{"make", "go"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("SKIP: %s not installed", p)
		}
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "github.com/numasteal/numasteal/cmd/numasteal",
		"github.com/numasteal/numasteal/cmd/numasteal-launch", membuild.MemhogPackage)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the binaries: %v\n%s", err, out)
	}
	work := t.TempDir()
	const compiles = 3
	res, err := RunMemory(context.Background(), MemoryOptions{
		LimitMiB: 100, Compiles: compiles, CompileMiB: 60, CompileMS: 200, Reps: 1,
		Numasteal: filepath.Join(bin, "numasteal"), Dir: work,
	})
	if errors.Is(err, ErrNoMemoryCgroup) {
		if os.Getenv("CI") == "true" && membuild.HasController() {
			t.Fatalf("this machine has a memory controller but the benchmark cannot make a cgroup: %v", err)
		}
		t.Skipf("SKIP: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"make -j1", "make -j2", "make -j4",
		`make -j CC="numasteal-launch cc", first run`, `make -j CC="numasteal-launch cc", second run`,
		"numasteal run -j 4, first run", "numasteal run -j 4, second run"}
	if len(res.Rows) != len(want) {
		t.Fatalf("%d rows, want %d: %+v", len(res.Rows), len(want), res.Rows)
	}
	for i, row := range res.Rows {
		if row.Name != want[i] || row.Launcher != (i == 3 || i == 4) || row.Run != (i >= 5) || len(row.Runs) != 1 {
			t.Errorf("row %d: %q (launcher %v, %d runs), want %q", i, row.Name, row.Launcher, len(row.Runs), want[i])
			continue
		}
		r := row.Runs[0]
		t.Logf("%-45s completed %v, built %d, OOM kills %d, failed %d, %.2f s, ratio %.2f",
			row.Name, r.Completed, r.Built, r.OOMKills, r.Failed, r.WallS, row.Ratio)
		if r.Built+r.Failed != compiles || int64(r.Failed) > r.OOMKills {
			t.Errorf("%s: %d built and %d failed jobs of %d, %d OOM kills: want each object built or a failed job, each failure an OOM kill",
				row.Name, r.Built, r.Failed, compiles, r.OOMKills)
		}
		if r.Completed != (r.Built == compiles && r.Failed == 0) || (row.Completed == 1) != r.Completed {
			t.Errorf("%s: completed %v (row: %d) with %d of %d built, %d failed", row.Name, r.Completed, row.Completed, r.Built, compiles, r.Failed)
		}
		if r.WallS <= 0 || row.WallS != r.WallS {
			t.Errorf("%s: wall %v s, median %v s", row.Name, r.WallS, row.WallS)
		}
		if (row.Ratio > 0) != r.Completed {
			t.Errorf("%s: ratio %v, completed %v", row.Name, row.Ratio, r.Completed)
		}
	}
	if r := res.Rows[0].Runs[0]; !r.Completed || r.OOMKills != 0 {
		t.Errorf("make -j1 of 60 MiB compiles in 100 MiB: %+v, want every object built and no OOM kill", r)
	}
	if res.BestFixed == "" || res.Rows[0].Ratio == 0 {
		t.Errorf("best fixed -j %q, make -j1's ratio %v: want a best", res.BestFixed, res.Rows[0].Ratio)
	}
	for _, row := range res.Rows[3:] {
		if r := row.Runs[0]; !r.Completed || r.Failed != 0 || (row.Launcher && r.DaemonJobs < compiles) {
			t.Errorf("%s: %+v, want every object built, no failed job, every compile through the daemon", row.Name, r)
		}
	}
	if _, err := os.Stat(res.Cgroup); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cgroup %s is still there (%v)", res.Cgroup, err)
	}
	if left, _ := os.ReadDir(work); len(left) != 0 {
		t.Errorf("the work directory still holds %v", left)
	}
}

func TestRunOOMKills(t *testing.T) {
	out := "12 tasks: 11 succeeded, 1 failed\nmemory: limit 353M (/sys/fs/cgroup/memory/g/numasteal-1/memory.limit_in_bytes), 20M available at the end, 3 OOM kills, 0 freezes, 0 thaws, 2 OOM retries\n"
	m := runOOMKills.FindSubmatch([]byte(out))
	if m == nil || string(m[1]) != "3" {
		t.Errorf("runOOMKills in %q: %q, want 3", out, m)
	}
	if m := runOOMKills.FindSubmatch([]byte("FAILED: 3 OOM kills, said a task\n")); m != nil {
		t.Errorf("runOOMKills matched a line that is not the memory line: %q", m)
	}
}
