package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

const validPeerOutput = `peer rayon 1.6.1 2
fib serial 100 110 0 832040
fib par 60 120 5 832040
cutoff par 55 110 0 832040
sum serial 10 10 0 4950
sum par 6 12 0 4950
sort serial 20 20 0 1
sort par 12 24 1 1
spawn par 30 60 0 1000
`

func TestParsePeerOutput(t *testing.T) {
	out, err := ParsePeerOutput([]byte(validPeerOutput))
	if err != nil {
		t.Fatal(err)
	}
	if out.Name != "rayon" || out.Version != "1.6.1" || out.Threads != 2 || len(out.Samples) != len(peerLines) {
		t.Fatalf("got %+v", out)
	}
	if s := out.sample("sort", "par"); s != (PeerSample{"sort", "par", 12, 24, 1, 1}) {
		t.Errorf("sort par = %+v", s)
	}
}

func TestParsePeerOutputRejects(t *testing.T) {
	lines := strings.Split(strings.TrimSuffix(validPeerOutput, "\n"), "\n")
	join := func(ls ...string) []byte { return []byte(strings.Join(ls, "\n") + "\n") }
	for name, in := range map[string][]byte{
		"empty":          nil,
		"no header":      join(lines[1:]...),
		"bad threads":    join(append([]string{"peer rayon 1.6.1 zero"}, lines[1:]...)...),
		"zero threads":   join(append([]string{"peer rayon 1.6.1 0"}, lines[1:]...)...),
		"missing line":   join(lines[:len(lines)-1]...),
		"duplicate line": join(append(slices.Clone(lines), lines[2])...),
		"unknown line":   join(append(slices.Clone(lines), "spawn serial 1 1 1 1")...),
		"short line":     join(append(slices.Clone(lines[:2]), "cutoff par 55 110 0")...),
		"negative":       join(append(slices.Clone(lines[:2]), "cutoff par -55 110 0 832040")...),
		"overflow":       join(append(slices.Clone(lines[:2]), "cutoff par 99999999999999999999 110 0 1")...),
	} {
		if _, err := ParsePeerOutput(in); err == nil {
			t.Errorf("%s: no error for %q", name, in)
		}
	}
}

// FuzzParsePeerOutput checks that the parser never panics and that what
// it accepts prints back to text it parses the same.
func FuzzParsePeerOutput(f *testing.F) {
	f.Add([]byte(validPeerOutput))
	f.Add([]byte("peer tbb 2021.8 1\n"))
	f.Add([]byte("peer x y 3\nfib par 1 2 3 4\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := ParsePeerOutput(b)
		if err != nil {
			return
		}
		var text bytes.Buffer
		fmt.Fprintf(&text, "peer %s %s %d\n", out.Name, out.Version, out.Threads)
		for _, s := range out.Samples {
			fmt.Fprintf(&text, "%s %s %d %d %d %d\n", s.Workload, s.Variant, s.WallNs, s.CPUNs, s.WaitNs, s.Check)
		}
		again, err := ParsePeerOutput(text.Bytes())
		if err != nil {
			t.Fatalf("accepted %q, but not its reprint %q: %v", b, text.Bytes(), err)
		}
		if fmt.Sprint(again) != fmt.Sprint(out) {
			t.Fatalf("reprint parsed to %+v, want %+v", again, out)
		}
	})
}

func TestPeersOptionsRejectBadInput(t *testing.T) {
	for _, o := range []PeersOptions{{FibN: 1}, {FibN: 20, Cutoff: 21}, {Cutoff: 1}, {SumN: -1}, {Joins: -5}} {
		if _, err := RunForkJoinPeers(context.Background(), o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

func TestForks(t *testing.T) {
	// fib(5) calls itself with n = 5, 4, 3, 3, 2, 2, 2, 1, ...: 7 calls with
	// n >= 2, 4 with n >= 3.
	if got := forks(5, 2); got != 7 {
		t.Errorf("forks(5, 2) = %d, want 7", got)
	}
	if got := forks(5, 3); got != 4 {
		t.Errorf("forks(5, 3) = %d, want 4", got)
	}
	if got := forks(30, 2); got != int64(fibSerial(31)-1) {
		t.Errorf("forks(30, 2) = %d, want fib(31)-1", got)
	}
}

// TestForkJoinPeersEndToEnd builds the peers whose toolchains are present
// (into a temporary cache), runs every contender on small sizes, and
// checks the rows: every runtime on every workload it runs, answers
// checked by the driver. Peers whose toolchain is missing skip the test
// with the packages to install, except under CI=true, whose .ci/run
// installs them.
func TestForkJoinPeersEndToEnd(t *testing.T) {
	defer goleak.VerifyNone(t)
	cache := t.TempDir()
	o := PeersOptions{FibN: 16, Cutoff: 8, SumN: 1 << 16, SortN: 1 << 17, Joins: 1000, Reps: 2, CacheDir: cache}
	r, err := RunForkJoinPeers(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	runtimes := map[string][]string{}
	for _, row := range r.Rows {
		runtimes[row.Workload] = append(runtimes[row.Workload], row.Runtime)
		if row.Workload != "spawn" && row.SerialNs.N == 0 {
			t.Errorf("%s %s: no serial loop", row.Workload, row.Runtime)
		}
		if r.Threads > 1 && row.RatioN.N != o.Reps && row.NsPerForkN.N != o.Reps {
			t.Errorf("%s %s: %d parallel rounds, want %d", row.Workload, row.Runtime, row.RatioN.N, o.Reps)
		}
	}
	for _, w := range []string{"fib", "cutoff", "spawn"} {
		for _, rt := range []string{"numasteal Jobs.Join", "numasteal Ctx.Join", "Go goroutines"} {
			if !slices.Contains(runtimes[w], rt) {
				t.Errorf("%s: no row of %s", w, rt)
			}
		}
	}
	for _, p := range peerSpecs {
		skipped := slices.ContainsFunc(r.Skipped, func(s PeerSkip) bool { return s.Peer == p.name })
		for _, w := range peerWorkloads {
			ran := slices.ContainsFunc(runtimes[w], func(rt string) bool {
				return strings.HasPrefix(strings.ToLower(rt), strings.ToLower(p.title[:3]))
			})
			if ran == skipped {
				t.Errorf("peer %s on %s: ran %v, skipped %v", p.name, w, ran, skipped)
			}
		}
	}
	var table bytes.Buffer
	WritePeersTable(&table, r)
	t.Logf("\n%s", table.String())
	// The cache holds one directory per built peer, no build leftovers;
	// the source tree gets no build output.
	entries, err := os.ReadDir(cache)
	if err != nil && len(r.Skipped) < len(peerSpecs) {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("build leftover in the cache: %s", e.Name())
		}
	}
	for _, f := range []string{"peers/rayon/Cargo.lock", "peers/rayon/target"} {
		if _, err := os.Stat(filepath.FromSlash(f)); err == nil {
			t.Errorf("build output in the source tree: bench/%s", f)
		}
	}
	if len(r.Skipped) > 0 {
		var why []string
		for _, s := range r.Skipped {
			why = append(why, s.Peer+": "+s.Reason)
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("peers skipped under CI (.ci/run installs their packages): %s", strings.Join(why, "; "))
		}
		t.Skipf("peers skipped: %s", strings.Join(why, "; "))
	}
}
