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

// TestBenchKernbenchNativeBadInput: a misspelt native corpus, a flag of
// the other kind of corpus and a missing launcher are refused before
// anything runs (the work directory is not even made).
func TestBenchKernbenchNativeBadInput(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "numasteal")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--corpus", "linux:defconfig"}, exitUsage, "tinyconfig only"},
		{[]string{"--corpus", "debian-cmake:"}, exitUsage, "name a Debian source package"},
		{[]string{"--corpus", "linux:tinyconfig", "--runners", "make"}, exitUsage, "--runners applies to the recorded corpora"},
		{[]string{"--corpus", "debian-cmake:libzstd", "--svg", "x.svg"}, exitUsage, "--svg applies to the recorded corpora"},
		{[]string{"--corpus", "cgen", "--two"}, exitUsage, "--two applies to the native corpora"},
		{[]string{"--corpus", "debian:libzstd", "--launcher", fake}, exitUsage, "--launcher applies to the native corpora"},
		{[]string{"--corpus", "linux:tinyconfig", "--numasteal", fake, "--launcher", filepath.Join(dir, "missing")}, exitFail, "the launcher: stat"},
		{[]string{"--corpus", "debian-cmake:libzstd", "--numasteal", fake}, exitFail, "numasteal-launch beside " + fake},
	} {
		work := filepath.Join(dir, "work")
		var stdout, stderr bytes.Buffer
		code := runBenchKernbench(context.Background(), append(tt.args, "-q", "--dir", work), &stdout, &stderr)
		if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", tt.args, code, stderr.String(), tt.code, tt.want)
		}
		if _, err := os.Stat(work); !os.IsNotExist(err) {
			t.Errorf("%q: the work directory was made (%v)", tt.args, err)
		}
	}
}
