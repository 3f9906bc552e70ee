package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
)

// The trace of a run at -j 8 on 2 CPUs (the binary under taskset where the
// machine has more) is read as ninja's: one track per slot, "slot 1" to
// "slot N" with N at most 8 and more than the CPUs, no two slices of a
// track overlapping; each slice named by its output ("-o t3.o") or, with
// none, its command, never "line 12"; its CPU and node in the args.
func TestRunTraceSlots(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no cc")
	}
	bin := numastealBinary(t)
	dir := t.TempDir()
	writeFile(t, dir, "t.c", "int t(void) { return 0; }\n")
	var b strings.Builder
	outputs := map[string]bool{"sleep 0.3": true}
	for i := range 8 {
		fmt.Fprintf(&b, "sleep 0.3\ncc -c t.c -o t%d.o\n", i)
		outputs[fmt.Sprintf("t%d.o", i)] = true
	}
	cmds := writeFile(t, dir, "c.txt", b.String())
	trace := filepath.Join(dir, "trace.json")
	args := []string{bin, "run", "-j", "8", "--progress", "none", "--history", "", "--trace", trace, cmds}
	if goruntime.NumCPU() > 2 {
		ts, err := exec.LookPath("taskset")
		if err != nil {
			t.Skip("more than 2 CPUs and no taskset to keep the run on 2")
		}
		args = append([]string{ts, "-c", "0,1"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	doc := readTrace(t, trace)
	type span struct{ start, end float64 }
	tracks, byTrack, cpus := map[int]string{}, map[int][]span{}, map[float64]bool{}
	n := 0
	for _, ev := range doc.TraceEvents {
		switch {
		case ev.Ph == "M" && ev.Name == "thread_name":
			tracks[ev.Tid], _ = ev.Args["name"].(string)
		case ev.Ph == "X":
			n++
			if !outputs[ev.Name] {
				t.Errorf("slice named %q, want an output file or the command (args %v)", ev.Name, ev.Args)
			}
			cpu, ok1 := ev.Args["cpu"].(float64)
			_, ok2 := ev.Args["node"].(float64)
			if !ok1 || !ok2 || cpu < 0 {
				t.Errorf("slice %q: args %v lack the cpu and node", ev.Name, ev.Args)
			}
			cpus[cpu] = true
			byTrack[ev.Tid] = append(byTrack[ev.Tid], span{ev.Ts, ev.Ts + ev.Dur})
		}
	}
	if n != 16 {
		t.Errorf("%d slices, want 16", n)
	}
	if len(cpus) > 2 {
		t.Errorf("slices on CPUs %v, want 2 at most", cpus)
	}
	if len(byTrack) <= 2 || len(byTrack) > 8 {
		t.Errorf("%d tracks of slices, want more than the 2 CPUs and at most -j 8", len(byTrack))
	}
	for tid, ss := range byTrack {
		if !strings.HasPrefix(tracks[tid], "slot ") {
			t.Errorf("track %d is named %q, want slot N", tid, tracks[tid])
		}
		slices.SortFunc(ss, func(a, b span) int {
			if a.start < b.start {
				return -1
			}
			if a.start > b.start {
				return 1
			}
			return 0
		})
		for i := 1; i < len(ss); i++ {
			if ss[i].start < ss[i-1].end {
				t.Errorf("track %q: a slice at %.0f µs starts before the one before it ends (%.0f µs)", tracks[tid], ss[i].start, ss[i-1].end)
			}
		}
	}
}
