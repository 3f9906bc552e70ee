package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/internal/corpus"
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/domains"
)

// run runs the command line args and returns its exit code and output.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = dispatch(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestDispatch(t *testing.T) {
	tests := []struct {
		args        []string
		code        int
		out, errOut string // substrings expected in stdout, stderr
	}{
		{nil, exitUsage, "", "usage: numasteal <command>"},
		{[]string{"help"}, exitOK, "topo ", ""},
		{[]string{"-h"}, exitOK, "usage: numasteal <command>", ""},
		{[]string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{[]string{"topo", "--bogus"}, exitUsage, "", "numasteal topo: unknown flag: --bogus\nRun 'numasteal topo -h' for usage.\n"},
		{[]string{"topo", "-root"}, exitUsage, "", "unknown shorthand flag: 'r' in -root"},
		{[]string{"--version"}, exitOK, "numasteal ", ""},
		{[]string{"topo", "extra"}, exitUsage, "", `unexpected argument "extra"`},
		{[]string{"topo", "-h"}, exitOK, "", "usage: numasteal topo [--root DIR] [--domains] [--json]"},
		{[]string{"topo", "--root", "/nonexistent/numasteal-root"}, exitUsage, "", "/nonexistent/numasteal-root"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := run(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			if !strings.Contains(out, tt.out) {
				t.Errorf("stdout %q lacks %q", out, tt.out)
			}
			if !strings.Contains(errOut, tt.errOut) {
				t.Errorf("stderr %q lacks %q", errOut, tt.errOut)
			}
		})
	}
}

func TestTopoCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errb bytes.Buffer
	if code := runTopo(ctx, nil, &out, &errb); code != exitFail {
		t.Errorf("exit code %d with a cancelled context, want %d", code, exitFail)
	}
}

// jsonKeys are the keys topo --json always prints (topoReport), each with
// whether it may be null.
var jsonKeys = map[string]bool{
	"cpus": false, "packages": false, "cores": false, "nodes": false,
	"distances": true, "caches": false, "domains": false,
}

// decodeReport checks the raw document's required keys and decodes it.
func decodeReport(t *testing.T, out string) *topoReport {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	for key, nullable := range jsonKeys {
		v, ok := raw[key]
		if !ok {
			t.Errorf("key %q missing", key)
		} else if !nullable && string(v) == "null" {
			t.Errorf("key %q is null, want a value ([] when empty)", key)
		}
	}
	// No list anywhere may be null: every null in the document is one of
	// the nullable objects.
	if n := strings.Count(out, "null"); n > strings.Count(out, `"distances": null`)+strings.Count(out, `"quota": null`) {
		t.Errorf("document has a null list:\n%s", out)
	}
	var r topoReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// checkReport compares the document with the topology and domains it came
// from.
func checkReport(t *testing.T, r *topoReport, top *topology.Topology, d *domains.Domains) {
	t.Helper()
	if !slices.Equal(r.CPUs, top.Usable.IDs()) {
		t.Errorf("cpus %v, want %v", r.CPUs, top.Usable.IDs())
	}
	if len(r.Nodes) != len(top.Nodes) {
		t.Fatalf("%d nodes, want %d", len(r.Nodes), len(top.Nodes))
	}
	for i, n := range top.Nodes {
		if g := r.Nodes[i]; g.ID != n.ID || !slices.Equal(g.CPUs, n.Usable.IDs()) || g.MemoryBytes != n.MemoryBytes {
			t.Errorf("node %+v, want id %d cpus %v memory %d", g, n.ID, n.Usable.IDs(), n.MemoryBytes)
		}
	}
	if (r.Distances == nil) != (top.Distances == nil) {
		t.Errorf("distances %v, topology has %v", r.Distances, top.Distances)
	} else if r.Distances != nil {
		if !slices.Equal(r.Distances.Nodes, top.Distances.Nodes) || !slices.EqualFunc(r.Distances.Matrix, top.Distances.Matrix, slices.Equal) {
			t.Errorf("distances %+v, want %+v", *r.Distances, *top.Distances)
		}
	}
	if len(r.Domains) != len(d.Levels) {
		t.Fatalf("%d domain levels, want %d", len(r.Domains), len(d.Levels))
	}
	for i, l := range d.Levels {
		g := r.Domains[i]
		if g.Name != string(l.Name) || g.ImbalancePct != l.Params.ImbalancePct || !slices.EqualFunc(g.Spans, l.SpanIDs(), slices.Equal) {
			t.Errorf("domain %d: %s pct %d spans %v, want %s pct %d spans %v", i, g.Name, g.ImbalancePct, g.Spans, l.Name, l.Params.ImbalancePct, l.SpanIDs())
		}
		if (g.Distance != nil) != (l.Name == domains.NUMA) || g.Distance != nil && *g.Distance != l.Distance {
			t.Errorf("domain %d (%s): distance %v, want %d on NUMA levels only", i, g.Name, g.Distance, l.Distance)
		}
	}
	for _, c := range r.Caches {
		if len(c.CPUs) == 0 || c.Level < 1 || !slices.Contains([]string{"data", "instruction", "unified"}, c.Type) {
			t.Errorf("cache %+v", c)
		}
	}
}

// checkText checks the human output against the topology: one PU line per
// usable CPU, the numactl node lines, and with domains every level.
func checkText(t *testing.T, out string, top *topology.Topology, d *domains.Domains) {
	t.Helper()
	pus := regexp.MustCompile(`PU L#(\d+) \(P#(\d+)\)`).FindAllStringSubmatch(out, -1)
	var got []int
	for _, m := range pus {
		var id int
		fmt.Sscan(m[2], &id)
		got = append(got, id)
	}
	slices.Sort(got)
	if !slices.Equal(got, top.Usable.IDs()) {
		t.Errorf("tree PUs %v, want the usable CPUs %v", got, top.Usable.IDs())
	}
	if !strings.HasPrefix(strings.SplitN(out, "\n\n", 3)[1], "Machine") {
		t.Errorf("the tree does not start with Machine:\n%s", out)
	}
	if want := fmt.Sprintf("available: %d nodes (", len(top.Nodes)); !strings.Contains(out, want) {
		t.Errorf("no %q line", want)
	}
	for _, n := range top.Nodes {
		for _, want := range []string{fmt.Sprintf("node %d cpus:%s\n", n.ID, spaced(n.Usable)), fmt.Sprintf("node %d size: %d MB\n", n.ID, n.MemoryBytes>>20)} {
			if !strings.Contains(out, want) {
				t.Errorf("no line %q", want)
			}
		}
	}
	if n := strings.Count(out, "NUMANode L#"); n != len(top.Nodes) {
		t.Errorf("%d NUMANode lines in the tree, want %d", n, len(top.Nodes))
	}
	for _, l := range d.Levels {
		if want := fmt.Sprintf("  %d %s", l.Depth, l.Name); !strings.Contains(out, want) {
			t.Errorf("no domain line %q", want)
		}
	}
}

func TestTopoLive(t *testing.T) {
	top, err := topology.Discover()
	if err != nil {
		t.Fatal(err)
	}
	d, err := domains.Build(top)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "topo", "--domains")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	checkText(t, out, top, d)
	code, out, errOut = run(t, "topo", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	r := decodeReport(t, out)
	checkReport(t, r, top, d)
	if !r.Live || r.Root != "/" {
		t.Errorf("live %v root %q, want true and /", r.Live, r.Root)
	}
}

// TestTopoCorpus runs "numasteal topo" on every machine of the corpus, in
// both forms, and checks the output against the topology and against
// hwloc's counts in expected.json.
func TestTopoCorpus(t *testing.T) {
	corpus.Dir(t) // skips with a message when ../shared is absent
	names := corpus.Names()
	if len(names) == 0 {
		t.Fatal("corpus has no machines")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			root := corpus.Extract(t, name)
			top, err := topology.Discover(topology.WithRoot(root))
			if err != nil {
				t.Fatal(err)
			}
			d, err := domains.Build(top)
			if err != nil {
				t.Fatal(err)
			}
			code, out, errOut := run(t, "topo", "--root", root, "--json")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			r := decodeReport(t, out)
			checkReport(t, r, top, d)
			// hwloc also counts a package that holds an allowed NUMA node
			// but no usable CPU (32amd64-4s2n4c-cgroup2,
			// 16amd64-8n2c-cpusets); "packages" counts packages with a
			// usable CPU, so compare with hwloc's non-empty packages.
			e := corpus.Load(t, name)
			withCPUs := 0
			for _, p := range e.PackageList {
				if len(p.CPUs) > 0 {
					withCPUs++
				}
			}
			if r.Packages != withCPUs || r.Cores != e.Cores || len(r.CPUs) != e.PUs {
				t.Errorf("packages/cores/cpus %d/%d/%d, hwloc %d (%d with CPUs)/%d/%d", r.Packages, r.Cores, len(r.CPUs), e.Packages, withCPUs, e.Cores, e.PUs)
			}

			code, out, errOut = run(t, "topo", "--root", root, "--domains")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			checkText(t, out, top, d)
		})
	}
}

func TestHwlocSize(t *testing.T) {
	for _, tt := range []struct {
		bytes int64
		want  string
	}{
		{32 << 10, "32KB"},
		{8 << 20, "8192KB"},
		{32 << 20, "32MB"},
		{5465 << 20, "5465MB"},
		{15 << 30, "15GB"},
		{1534 << 30, "1534GB"},
		{12 << 40, "12TB"},
	} {
		if got := hwlocSize(tt.bytes); got != tt.want {
			t.Errorf("hwlocSize(%d) = %q, want %q", tt.bytes, got, tt.want)
		}
	}
}

// TestTreeShapes checks pieces of the tree against what lstopo-no-graphics
// prints for the same dumps (the .output files beside them, less -v).
func TestTreeShapes(t *testing.T) {
	corpus.Dir(t)
	tests := []struct {
		name string
		want []string // lines, trimmed of indentation, in order
	}{
		{"16em64t-4s2c2t", []string{
			"Machine (15GB total)",
			"NUMANode L#0 (P#0 15GB)",
			"Package L#0 + L3 L#0 (4096KB)",
			"L2 L#0 (1024KB) + L1d L#0 (16KB) + Core L#0",
			"PU L#0 (P#0)",
			"PU L#1 (P#8)",
		}},
		{"48amd64-4pa2n6c-sparse", []string{
			"Package L#0",
			"L3 L#0 (5118KB)",
			"NUMANode L#0 (P#0 8189MB)",
			"L2 L#0 (512KB) + L1d L#0 (64KB) + L1i L#0 (64KB) + Core L#0 + PU L#0 (P#0)",
		}},
		{"128ia64-17n4s2c", []string{
			"NUMANode L#16 (P#16 996MB)",
			"Group0 L#0",
			"NUMANode L#0 (P#0 95GB)",
			"Package L#0",
			"Core L#0 + PU L#0 (P#0)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, "topo", "--root", corpus.Extract(t, tt.name))
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var lines []string
			for _, l := range strings.Split(out, "\n") {
				lines = append(lines, strings.TrimSpace(l))
			}
			i := slices.Index(lines, tt.want[0])
			if i < 0 || len(lines) < i+len(tt.want) || !slices.Equal(lines[i:i+len(tt.want)], tt.want) {
				t.Errorf("tree lacks\n%s\nin\n%s", strings.Join(tt.want, "\n"), out)
			}
		})
	}
}

func TestInlineScalarLists(t *testing.T) {
	in := map[string]any{
		"a": []any{"x [1, 2]\n \"q\"", 3},
		"b": []any{[]int{1, 2}, map[string]any{"c": []int{1}}},
		"e": []int{},
	}
	doc, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got := string(inlineScalarLists(doc))
	want := `{
  "a": ["x [1, 2]\n \"q\"",3],
  "b": [
    [1,2],
    {
      "c": [1]
    }
  ],
  "e": []
}`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
