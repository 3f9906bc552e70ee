package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
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
