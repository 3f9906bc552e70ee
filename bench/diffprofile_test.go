package bench

import (
	"bytes"
	"compress/gzip"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// pb is a tiny protobuf writer for synthetic pprof profiles.
type pb struct{ b []byte }

func (p *pb) varint(x uint64) {
	for x >= 0x80 {
		p.b = append(p.b, byte(x)|0x80)
		x >>= 7
	}
	p.b = append(p.b, byte(x))
}
func (p *pb) uint(field int, x uint64) { p.varint(uint64(field) << 3); p.varint(x) } // wire type 0
func (p *pb) bytes(field int, b []byte) {
	p.varint(uint64(field)<<3 | 2)
	p.varint(uint64(len(b)))
	p.b = append(p.b, b...)
}

// syntheticProfile builds a gzipped pprof profile with the given flat
// samples per function: one location and function per name, each sample
// a stack of the function under "main".
func syntheticProfile(samples map[string]int64, order []string) []byte {
	var prof pb
	strs := []string{"", "samples", "count", "main", "cpu", "nanoseconds"}
	prof.bytes(1, func() []byte { var v pb; v.uint(1, 1); v.uint(2, 2); return v.b }()) // sample_type: samples/count
	prof.bytes(1, func() []byte { var v pb; v.uint(1, 4); v.uint(2, 5); return v.b }()) // and cpu/nanoseconds
	for i, name := range append([]string{"main"}, order...) {
		id := uint64(i + 1)
		si := uint64(3)
		if name != "main" {
			strs = append(strs, name)
			si = uint64(len(strs) - 1)
		}
		var fn pb
		fn.uint(1, id)
		fn.uint(2, si)
		prof.bytes(5, fn.b)
		var line, loc pb
		line.uint(1, id)
		line.uint(2, 10)
		loc.uint(1, id)
		loc.bytes(4, line.b)
		prof.bytes(4, loc.b)
		if name == "main" {
			continue
		}
		var s, ids, vals pb
		ids.varint(id) // leaf first
		ids.varint(1)  // main
		vals.varint(uint64(samples[name]))
		vals.varint(uint64(samples[name]) * 10e6)
		s.bytes(1, ids.b) // packed
		s.bytes(2, vals.b)
		prof.bytes(2, s.b)
	}
	for _, s := range strs {
		prof.bytes(6, []byte(s))
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(prof.b)
	zw.Close()
	return z.Bytes()
}

func TestDiffProfileSynthetic(t *testing.T) {
	a := syntheticProfile(map[string]int64{"steal": 100, "park": 40, "compile": 500, "gone": 7}, []string{"steal", "park", "compile", "gone"})
	b := syntheticProfile(map[string]int64{"steal": 20, "park": 90, "compile": 500, "fresh": 3}, []string{"steal", "park", "compile", "fresh"})
	pa, err := ParsePprof("a", a)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := ParsePprof("b", b)
	if err != nil {
		t.Fatal(err)
	}
	if pa.Total != 647 || pa.Samples["steal"] != 100 || pb.Samples["fresh"] != 3 {
		t.Fatalf("parsed a=%v (total %d), b=%v", pa.Samples, pa.Total, pb.Samples)
	}
	rows := DiffProfiles(pa, pb)
	want := []DiffRow{
		{"park", 40, 90, 50, 125},
		{"fresh", 0, 3, 3, 0},
		{"gone", 7, 0, -7, -100},
		{"steal", 100, 20, -80, -80},
		{"total", 647, 613, -34, 100 * -34.0 / 647},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %+v, want %+v", rows, want)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
	var out bytes.Buffer
	WriteDiffProfile(&out, rows, 0)
	wantText := `     delta   delta %  function
        50    125.0%  park
         3       new  fresh
        -7   -100.0%  gone
       -80    -80.0%  steal
       -34     -5.3%  total
`
	if out.String() != wantText {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), wantText)
	}
	out.Reset()
	WriteDiffProfile(&out, rows, 1)
	if !strings.Contains(out.String(), "(2 more)") || strings.Contains(out.String(), "fresh") {
		t.Errorf("top 1 table:\n%s", out.String())
	}
}

func TestParsePprofBad(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"truncated varint", []byte{0x10, 0x80}},
		{"length past end", []byte{0x12, 0x05, 0x01}},
		{"bad wire type", []byte{0x0f}},
		{"bad gzip", []byte{0x1f, 0x8b, 0x00}},
	} {
		if _, err := ParsePprof("bad.pprof", tc.data); err == nil || !strings.Contains(err.Error(), "bad.pprof") {
			t.Errorf("%s: err = %v, want one naming bad.pprof", tc.name, err)
		}
	}
}

// A CPU profile as runtime/pprof writes it parses, and its samples are
// counted by function name.
func TestParsePprofRuntimeProfile(t *testing.T) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		t.Skipf("CPU profiling unavailable: %v", err)
	}
	n := 0
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		for i := range 1000 {
			n ^= i
		}
	}
	pprof.StopCPUProfile()
	p, err := ParsePprof("cpu.pprof", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for name, v := range p.Samples {
		if name == "" {
			t.Errorf("%d samples under an empty name", v)
		}
		sum += v
	}
	if sum != p.Total {
		t.Errorf("samples sum to %d, Total %d", sum, p.Total)
	}
	t.Logf("%d samples, %d functions (n=%d)", p.Total, len(p.Samples), n)
}
