package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchKernbenchCLI runs `numasteal bench kernbench` end to end on a
// two-file generated corpus, numasteal run being this test binary (see
// TestJobserverHelperProcess), and checks the JSON rows and the timeline.
func TestBenchKernbenchCLI(t *testing.T) {
	for _, p := range []string{"gcc", "ar", "make", "xargs"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not installed (.ci/run installs it)", p)
		}
	}
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "numasteal")
	script := "#!/bin/sh\n" + envCLI + "=1 exec " + os.Args[0] + " -test.run=TestJobserverHelperProcess -- \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	svg := filepath.Join(dir, "timeline.svg")
	var stdout, stderr bytes.Buffer
	code := runBenchKernbench(context.Background(), []string{
		"--files", "2", "--reps", "1", "--jobs", "max", "--json", "-q",
		"--numasteal", wrapper, "--svg", svg, "--dir", filepath.Join(dir, "work"),
	}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	var r struct {
		Rows []struct {
			Runner, Jobs string
			ElapsedS     float64 `json:"elapsed_s"`
			UserS        float64 `json:"user_s"`
			SysS         float64 `json:"sys_s"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	runners := map[string]bool{}
	for _, row := range r.Rows {
		runners[row.Runner] = true
		if row.ElapsedS <= 0 || row.UserS <= 0 {
			t.Errorf("row %+v: want positive elapsed and user", row)
		}
	}
	if !runners["numasteal"] || !runners["make"] || !runners["xargs"] {
		t.Errorf("runners %v, want numasteal, make and xargs", runners)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "obj/g00/f000.o") {
		t.Errorf("timeline lacks the first compile:\n%.500s", data)
	}
}

func TestBenchKernbenchBadCorpus(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := runBenchKernbench(context.Background(), []string{"--corpus", "tarball:x", "-q", "--dir", t.TempDir()}, &stdout, &stderr)
	if code != exitFail || !strings.Contains(stderr.String(), `unknown corpus "tarball:x"`) {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}
