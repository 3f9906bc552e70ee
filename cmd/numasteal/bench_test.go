package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchForkJoinJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"bench", "forkjoin", "-n", "12", "--reps", "1", "-q", "--json"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	var m map[string]float64
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("output is not a JSON object of numbers: %v\n%s", err, out.String())
	}
	for _, k := range []string{"fib_n", "serial_ns", "runtime_1w_ns", "runtime_all_ns", "goroutines_ns",
		"errgroup_ns", "spawn_join_ns", "inject_latency_ns"} {
		if v, ok := m[k]; !ok || v <= 0 {
			t.Errorf("key %q = %v, %v; want a positive number", k, v, ok)
		}
	}
	if m["fib_n"] != 12 {
		t.Errorf("fib_n = %v, want 12", m["fib_n"])
	}
}

func TestBenchCountersJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"bench", "counters", "--iters", "1000", "--reps", "1", "-q", "--json"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	var doc struct {
		Rows []struct {
			Name    string   `json:"name"`
			NsPerOp *float64 `json:"ns_per_op"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out.String())
	}
	names := map[string]bool{}
	for _, r := range doc.Rows {
		if r.NsPerOp == nil {
			t.Errorf("row %q has no ns_per_op", r.Name)
		}
		names[r.Name] = true
	}
	for _, want := range []string{"empty loop", "plain uint32", "plain uint64", "non-inlined uint64",
		"atomic.AddUint64 uncontended", "per-worker counter", "sharded atomic, all workers", "one shared atomic, all workers"} {
		if !names[want] {
			t.Errorf("no row %q in %v", want, names)
		}
	}
}

func TestBenchUnknown(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"bench", "nope"}, &out, &errb); code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	if !strings.Contains(errb.String(), `unknown command "nope"`) {
		t.Errorf("stderr %q does not name the benchmark", errb.String())
	}
}

func TestBenchMemoryBadFlags(t *testing.T) {
	for _, args := range [][]string{{"--compiles", "0"}, {"--limit", "-5"}, {"--ms", "0"}, {"--jobs", "2,0"}, {"--jobs", ""}, {"--launcher", "/nonexistent/numasteal-launch"}} {
		var out, errb bytes.Buffer
		code := dispatch(context.Background(), append([]string{"bench", "memory"}, args...), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), "numasteal bench memory") {
			t.Errorf("bench memory %v: exit %d, stderr %q; want a usage error before anything runs", args, code, errb.String())
		}
	}
}

func TestBenchForkJoinPeersRejectsBadSizes(t *testing.T) {
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"bench", "forkjoin", "--peers", "-n", "10", "-q"}, &out, &errb)
	if code != exitFail || !strings.Contains(errb.String(), "cutoff 12") {
		t.Fatalf("exit %d, stderr %q; want a failure naming the cutoff", code, errb.String())
	}
	if out.Len() > 0 {
		t.Errorf("stdout %q, want nothing", out.String())
	}
}
