package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/internal/corpus"
)

// TestBenchSim runs "numasteal bench sim" on a corpus machine: the JSON
// carries makespan, remote-steal fraction, cross-node migrations and
// utilisation, for all three policies unless
// --policy picks one, and a seed reproduces its output exactly.
func TestBenchSim(t *testing.T) {
	root := corpus.Extract(t, "16amd64-8n2c")
	type out struct {
		Policies []map[string]any `json:"policies"`
	}
	parse := func(args ...string) (out, string) {
		code, stdout, stderr := run(t, append([]string{"bench", "sim", "--root", root}, args...)...)
		if code != exitOK {
			t.Fatalf("bench sim %v: exit %d: %s", args, code, stderr)
		}
		var o out
		if err := json.Unmarshal([]byte(stdout), &o); err != nil {
			t.Fatalf("bench sim %v: %v\n%s", args, err, stdout)
		}
		return o, stdout
	}
	o, first := parse("--workload", "sdet", "--json", "--seed", "2")
	var names []string
	for _, p := range o.Policies {
		names = append(names, p["name"].(string))
		for _, k := range []string{"makespan_s", "remote_steal_fraction", "cross_node_migrations", "utilization"} {
			if _, ok := p[k].(float64); !ok {
				t.Errorf("policy %v: no number %q", p["name"], k)
			}
		}
	}
	if strings.Join(names, ",") != "hierarchical,flat,local" {
		t.Errorf("policies %v", names)
	}
	if _, again := parse("--workload", "sdet", "--json", "--seed", "2"); again != first {
		t.Error("the same seed gave different output")
	}
	if o, _ := parse("--workload", "forkjoin", "--json", "--policy", "flat"); len(o.Policies) != 1 || o.Policies[0]["name"] != "flat" {
		t.Errorf("--policy flat: %v", o.Policies)
	}
	code, stdout, _ := run(t, "bench", "sim", "--root", root, "--workload", "forkjoin")
	if code != exitOK || !strings.Contains(stdout, "SIMULATION") {
		t.Errorf("text output: exit %d\n%s", code, stdout)
	}
	for _, bad := range [][]string{
		{"bench", "sim"},
		{"bench", "sim", "--root", root, "--policy", "random"},
	} {
		if code, _, _ := run(t, bad...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", bad, code, exitUsage)
		}
	}
	if code, _, stderr := run(t, "bench", "sim", "--root", root, "--workload", "nope"); code != exitUsage || !strings.Contains(stderr, "nope") {
		t.Errorf("unknown workload: exit %d, %s", code, stderr)
	}
}
