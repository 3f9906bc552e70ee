package bench

import (
	"encoding/xml"
	"strings"
	"testing"
)

func TestTimelineSVG(t *testing.T) {
	trace := `{"traceEvents":[
{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"x"}},
{"name":"obj/a.o","ph":"X","ts":0,"dur":1000000,"pid":1,"tid":0},
{"name":"obj/b.o","ph":"X","ts":500000,"dur":1000000,"pid":1,"tid":0},
{"name":"bin/app","ph":"X","ts":1500000,"dur":200000,"pid":1,"tid":1}
]}`
	spans, err := ParseTraceSpans("t.json", []byte(trace))
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 3 || spans[2].Track != 1 || spans[1].End != 1.5 {
		t.Fatalf("spans %+v", spans)
	}
	var b strings.Builder
	if err := TimelineSVG(&b, "a <title>", spans); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	// CPU 0 ran two tasks at once: two lanes.
	if !strings.Contains(svg, ">max 2<") || !strings.Contains(svg, ">max 1<") || !strings.Contains(svg, "a &lt;title&gt;") {
		t.Errorf("timeline lacks lanes or escaped title:\n%s", svg)
	}
	if _, err := ParseTraceSpans("bad.json", []byte(`{"traceEvents":[]}`)); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("empty trace: err = %v", err)
	}
}

func TestLineChartSVG(t *testing.T) {
	var b strings.Builder
	err := LineChartSVG(&b, "sdet", "N", "scripts/h", []float64{1, 2, 4},
		[]Series{{Name: "base", Y: []float64{10, 20, 25}, Err: []float64{1, 1, 2}}, {Name: "ns", Y: []float64{11, 21, 30}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal([]byte(b.String()), new(struct{})); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	if strings.Count(b.String(), "<polyline") != 2 || strings.Count(b.String(), "<circle") != 6 {
		t.Errorf("chart:\n%s", b.String())
	}
}
