package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/numasteal/numasteal/bench"
)

func TestBenchScaleJSON(t *testing.T) {
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"bench", "scale", "-n", "50,200", "--reps", "1", "-q", "--json"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, errb.String())
	}
	var doc struct {
		Rows []struct {
			Shape     string  `json:"shape"`
			N         int     `json:"n"`
			NsPerTask float64 `json:"ns_per_task"`
			SchedB    float64 `json:"sched_bytes_per_task"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out.String())
	}
	if len(doc.Rows) != 6 {
		t.Fatalf("%d rows, want 3 shapes × 2 sizes:\n%s", len(doc.Rows), out.String())
	}
	for _, r := range doc.Rows {
		if r.NsPerTask <= 0 || r.SchedB <= 0 || (r.N != 50 && r.N != 200) {
			t.Errorf("row %+v", r)
		}
	}
	if code := dispatch(context.Background(), []string{"bench", "scale", "-n", "0"}, &out, &errb); code != exitUsage {
		t.Errorf("-n 0: exit %d, want %d", code, exitUsage)
	}
}

func TestParseJobsList(t *testing.T) {
	got, err := parseJobsList("default, 0,4")
	if err != nil || len(got) != 3 || got[0] != bench.DefaultJobs || got[1] != 0 || got[2] != 4 {
		t.Errorf("parseJobsList(\"default, 0,4\") = %v, %v", got, err)
	}
	for _, bad := range []string{"-1", "x", "", "2,"} {
		if _, err := parseJobsList(bad); err == nil {
			t.Errorf("parseJobsList(%q): no error", bad)
		}
	}
	var out, errb bytes.Buffer
	if code := dispatch(context.Background(), []string{"bench", "scale", "--run", "10", "--jobs", "x"}, &out, &errb); code != exitUsage {
		t.Errorf("--jobs x: exit %d, want %d", code, exitUsage)
	}
}
