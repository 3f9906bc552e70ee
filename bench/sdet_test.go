package bench

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestSDETTiny runs SDET briefly at N = 1 and 3 and checks that both
// contenders finished scripts and the table has a row per N.
func TestSDETTiny(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, p := range []string{"cc", "grep", "sort", "ls", "cp", "sh", "rm"} {
		requireProgram(t, p)
	}
	var calls int
	r, err := RunSDET(context.Background(), SDETOptions{
		Ns: []int{1, 3}, Duration: 300 * time.Millisecond, Reps: 2, Dir: t.TempDir(),
		Progress: func(SDETProgress) { calls++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Points) != 2 || calls != 8 {
		t.Fatalf("%d points, %d progress calls; want 2 and 8", len(r.Points), calls)
	}
	for _, p := range r.Points {
		if p.BaselinePerHour <= 0 || p.NumastealPerHour <= 0 || p.Pct <= 0 {
			t.Errorf("N=%d: %+v, want positive throughputs", p.N, p)
		}
		if len(p.Pcts) != 2 || slices.Min(p.Pcts) != p.PctMin || slices.Max(p.Pcts) != p.PctMax {
			t.Errorf("N=%d: repetitions' ratios %v, want 2 between %.1f and %.1f", p.N, p.Pcts, p.PctMin, p.PctMax)
		}
		if _, ok := processCPU(); ok && (p.BaselineSelfMS <= 0 || p.NumastealSelfMS <= 0) {
			t.Errorf("N=%d: own CPU per script %.3f / %.3f ms, want positive for both", p.N, p.BaselineSelfMS, p.NumastealSelfMS)
		}
		if _, ok := childrenCPU(); ok && (p.BaselineChildrenMS <= 0 || p.NumastealChildrenMS <= 0) {
			t.Errorf("N=%d: commands' CPU per script %.3f / %.3f ms, want positive for both", p.N, p.BaselineChildrenMS, p.NumastealChildrenMS)
		}
		if p.BaselineIdlePct < 0 || p.BaselineIdlePct > 100 || p.NumastealIdlePct < 0 || p.NumastealIdlePct > 100 {
			t.Errorf("N=%d: idle %.1f%% / %.1f%%, want 0–100", p.N, p.BaselineIdlePct, p.NumastealIdlePct)
		}
		if len(p.Commands) != len(sdetScript) {
			t.Fatalf("N=%d: %d commands timed, want the script's %d", p.N, len(p.Commands), len(sdetScript))
		}
		for _, c := range p.Commands {
			if c.BaselineUS <= 0 || c.NumastealUS <= 0 {
				t.Errorf("N=%d: %+v, want positive times for both", p.N, c)
			}
		}
	}
	var b strings.Builder
	WriteSDETTable(&b, r)
	if !strings.Contains(b.String(), "numasteal % median (range)") || strings.Count(b.String(), "%)") != 2 ||
		!strings.Contains(b.String(), "\n    1 cc ") || !strings.Contains(b.String(), "\n    3 cc ") {
		t.Errorf("table:\n%s", b.String())
	}
}

// TestSDETFailure: a failing command ends the measurement with its error.
func TestSDETFailure(t *testing.T) {
	defer goleak.VerifyNone(t)
	requireProgram(t, "false")
	fail := func(ctx context.Context, args []string, dir string) error {
		return execRun(ctx, []string{"false"}, dir)
	}
	_, err := sdetMeasure(context.Background(), 4, time.Second, []string{".", ".", ".", "."}, fail, &sdetTimes{})
	var ee *exec.ExitError
	if err == nil || !strings.Contains(err.Error(), "false") {
		t.Fatalf("err = %v (%T), want the failing command named", err, ee)
	}
}
