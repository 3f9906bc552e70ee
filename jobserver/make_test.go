//go:build linux

package jobserver

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// requireMake skips when GNU make is missing (.ci/run installs it).
func requireMake(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make not installed (.ci/run installs it)")
	}
	return p
}

// checkOverlap asserts that ivs never ran more than limit at once and at
// some point ran at least 2.
func checkOverlap(t *testing.T, ivs []interval, want, limit int) {
	t.Helper()
	if len(ivs) != want {
		t.Fatalf("got %d intervals, want %d", len(ivs), want)
	}
	for _, iv := range ivs {
		if iv.end < iv.start {
			t.Fatalf("interval %v ends before it starts", iv)
		}
	}
	got := maxOverlap(ivs)
	t.Logf("max overlap %d (limit %d)", got, limit)
	if got > limit {
		t.Errorf("%d jobs ran at once, the jobserver allows %d", got, limit)
	}
	if got < 2 {
		t.Errorf("never more than %d job at once: the jobserver was not used", got)
	}
}

// TestMakeUnderServer runs GNU make, with no -j of its own, as a child of a
// 3-slot Server: make takes its slots from the jobserver in MAKEFLAGS.
func TestMakeUnderServer(t *testing.T) {
	mk := requireMake(t)
	t.Parallel()
	s, err := NewServer(3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := t.TempDir()
	cmd := exec.Command(mk, "-f", filepath.Join("testdata", "recipes.mk"), "OUT="+out)
	cmd.Env = cleanEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// The job that runs make holds a slot: make's implicit one.
	tok, err := s.Client().Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if err := s.Wait(cmd); err != nil {
		t.Fatalf("make: %v\n%s", err, stderr.String())
	}
	if err := s.Client().Release(tok); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), "warning") {
		t.Errorf("make warned: %s", stderr.String())
	}
	checkOverlap(t, readIntervals(t, globFiles(t, out)...), 12, 3)
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.InPipe != 2 || st.Recovered != 0 || st.Drained != 0 {
		t.Errorf("after make: %+v, want all 2 tokens back and none recovered", st)
	}
}

// TestClientUnderMake runs a client process as a '+' recipe of make -j3:
// with 12 jobs admitted at once it must run at most 3 (its implicit slot and
// make's two tokens).
func TestClientUnderMake(t *testing.T) {
	mk := requireMake(t)
	t.Parallel()
	out := filepath.Join(t.TempDir(), "intervals")
	cmd := exec.Command(mk, "-j3", "-s", "-f", filepath.Join("testdata", "client.mk"),
		"HELPER="+os.Args[0]+" -test.run=^TestHelperProcess$")
	cmd.Env = append(cleanEnv(), envHelper+"=jobs", envJobs+"=12", envOut+"="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make: %v\n%s", err, b)
	}
	checkOverlap(t, readIntervals(t, out), 12, 3)
}

// TestNonRecursiveRecipe checks the error a client reports when make ran it
// without '+': make 4.3 keeps --jobserver-auth in MAKEFLAGS but closes the
// descriptors.
func TestNonRecursiveRecipe(t *testing.T) {
	mk := requireMake(t)
	t.Parallel()
	dir := t.TempDir()
	mf := filepath.Join(dir, "m.mk")
	if err := os.WriteFile(mf, []byte("all:\n\t@$(HELPER)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(mk, "-j3", "-s", "-f", mf, "HELPER="+os.Args[0]+" -test.run=^TestHelperProcess$")
	cmd.Env = append(cleanEnv(), envHelper+"=jobs", envJobs+"=1", envOut+"="+filepath.Join(dir, "out"))
	b, err := cmd.CombinedOutput()
	if err == nil {
		// make ≥ 4.4 drops the option for non-recursive recipes: no jobserver.
		t.Skipf("make passed no unusable jobserver: %s", b)
	}
	// fd 3 is either closed or already reused by the Go runtime.
	if !strings.Contains(string(b), "unusable") || !strings.Contains(string(b), "non-recursive") {
		t.Errorf("helper output %q, want an UnavailableError naming the non-recursive recipe", b)
	}
}
