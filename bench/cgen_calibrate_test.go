package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestCGenCalibrate prints the compile user time of generated files of
// several function counts, the measurement behind cgenBaseSec and
// cgenFuncSec. It runs only with NUMASTEAL_CALIBRATE=1:
//
//	NUMASTEAL_CALIBRATE=1 go test -run CGenCalibrate -v ./bench/
func TestCGenCalibrate(t *testing.T) {
	if os.Getenv("NUMASTEAL_CALIBRATE") == "" {
		t.Skip("set NUMASTEAL_CALIBRATE=1 to measure gcc -O2 per generated function")
	}
	dir := t.TempDir()
	for h := range 4 {
		if err := os.MkdirAll(filepath.Join(dir, "include"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "include", fmt.Sprintf("common%02d.h", h)), cgenHeader(h), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{1, 5, 20, 50, 100, 200, 300} {
		src := filepath.Join(dir, fmt.Sprintf("u%d.c", n))
		if err := os.WriteFile(src, cgenUnit(n, n, []int{0, 1, 2}), 0o644); err != nil {
			t.Fatal(err)
		}
		best := 1e9
		for range 3 {
			cmd := exec.Command("gcc", "-O2", "-Iinclude", "-c", src, "-o", src+".o")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("gcc: %v\n%s", err, out)
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			best = min(best, float64(ru.Utime.Nano()+ru.Stime.Nano())/1e9)
		}
		t.Logf("functions %4d: %.3f s user+sys (model %.3f s)", n, best, cgenBaseSec+float64(n)*cgenFuncSec)
	}
}
