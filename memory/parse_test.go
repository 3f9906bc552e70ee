package memory

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
)

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

const (
	psiLine = "some avg10=1.25 avg60=0.50 avg300=0.10 total=123456\n"
	psiFull = "full avg10=0.75 avg60=0.25 avg300=0.05 total=6543\n"
)

var pressureTests = []struct {
	in   string
	want Pressure
	err  string
}{
	{psiLine + psiFull, Pressure{Some10: 1.25, Full10: 0.75, SomeTotal: 123456, FullTotal: 6543}, ""},
	// The cpu resource before Linux 5.13 has no "full" line.
	{psiLine, Pressure{Some10: 1.25, SomeTotal: 123456}, ""},
	{"some avg10=100.00 avg60=99.00 avg300=98.00 total=9223372036854775807\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0", Pressure{Some10: 100, SomeTotal: math.MaxInt64}, ""},
	{"\n" + psiFull + "\n" + psiLine + "\n", Pressure{Some10: 1.25, Full10: 0.75, SomeTotal: 123456, FullTotal: 6543}, ""},
	// Fields in another order, unknown fields skipped.
	{"some total=5 avg10=2.00 avg1000=7\n", Pressure{Some10: 2, SomeTotal: 5}, ""},
	{"", Pressure{}, `no "some" line: syntax error`},
	{psiFull, Pressure{}, `no "some" line: syntax error`},
	{"half avg10=0.00 total=0\n", Pressure{}, `line "half avg10=0.00 total=0" is not some/full: syntax error`},
	{"some avg10 total=0\n", Pressure{}, `field "avg10" is not key=value: syntax error`},
	{"some avg10=x total=0\n", Pressure{}, `avg10 "x": syntax error`},
	{"some avg10=-1 total=0\n", Pressure{}, `avg10 "-1": syntax error`},
	{"some avg10=NaN total=0\n", Pressure{}, `avg10 "NaN": syntax error`},
	{"some avg10=+Inf total=0\n", Pressure{}, `avg10 "+Inf": syntax error`},
	{"some avg10=0.00 total=-5\n", Pressure{}, `total "-5": syntax error`},
	{"some avg10=0.00 total=9223372036854775808\n", Pressure{}, `total "9223372036854775808": syntax error`},
	{"some avg10=0.00 avg60=0.00\n", Pressure{}, `line "some avg10=0.00 avg60=0.00" lacks avg10 or total: syntax error`},
	// A key given twice does not stand in for the other.
	{"some avg10=1.00 avg10=2.00\n", Pressure{}, `line "some avg10=1.00 avg10=2.00" lacks avg10 or total: syntax error`},
}

func TestParsePressure(t *testing.T) {
	for _, tt := range pressureTests {
		got, err := parsePressure([]byte(tt.in))
		if got != tt.want || errString(err) != tt.err {
			t.Errorf("parsePressure(%q) = %+v, %v; want %+v, %q", tt.in, got, err, tt.want, tt.err)
		}
		if err != nil && !errors.Is(err, ErrSyntax) {
			t.Errorf("parsePressure(%q): %v does not wrap ErrSyntax", tt.in, err)
		}
	}
}

const meminfo = `MemTotal:       24683584 kB
MemFree:        20971520 kB
MemAvailable:   23592960 kB
HugePages_Total:       0
Node 0 MemUsed:  1024 kB
`

var keyedTests = []struct {
	in, key string
	skip    int
	v       int64
	ok      bool
	err     string
}{
	{meminfo, "MemAvailable:", 0, 23592960 << 10, true, ""},
	{meminfo, "MemFree:", 0, 20971520 << 10, true, ""},
	{meminfo, "HugePages_Total:", 0, 0, true, ""},
	{meminfo, "SwapFree:", 0, 0, false, ""},
	// A prefix of a key is not the key.
	{meminfo, "MemAvail", 0, 0, false, ""},
	{meminfo, "MemUsed:", 2, 1024 << 10, true, ""},
	{"Node 0 MemFree:       1048576 kB\n", "MemFree:", 2, 1 << 30, true, ""},
	{"oom_kill_disable 0\nunder_oom 0\noom_kill 7\n", "oom_kill", 0, 7, true, ""},
	{"nr_free_pages 1\noom_kill 3", "oom_kill", 0, 3, true, ""},
	{"low 0\nhigh 1\nmax 2\noom 3\noom_kill 4\noom_group_kill 5\n", "oom_kill", 0, 4, true, ""},
	{"total_inactive_file 4096\ninactive_file 8192\n", "inactive_file", 0, 8192, true, ""},
	{"oom_kill\n", "oom_kill", 0, 0, false, ""},
	{"", "oom_kill", 0, 0, false, ""},
	{"oom_kill x\n", "oom_kill", 0, 0, false, `oom_kill "x": syntax error`},
	{"oom_kill -1\n", "oom_kill", 0, 0, false, `oom_kill "-1": syntax error`},
	{"MemAvailable: 99999999999999999999 kB\n", "MemAvailable:", 0, 0, false, `MemAvailable: "99999999999999999999": syntax error`},
	// Kibibytes beyond what bytes can count are an error, not a wrap.
	{"MemAvailable: 9223372036854775807 kB\n", "MemAvailable:", 0, 0, false, `MemAvailable: "9223372036854775807" kB is too large: syntax error`},
	{fmt.Sprintf("MemAvailable: %d kB\n", int64(math.MaxInt64>>10)), "MemAvailable:", 0, math.MaxInt64 >> 10 << 10, true, ""},
}

func TestParseKeyed(t *testing.T) {
	for _, tt := range keyedTests {
		v, ok, err := parseKeyed([]byte(tt.in), tt.key, tt.skip)
		if v != tt.v || ok != tt.ok || errString(err) != tt.err {
			t.Errorf("parseKeyed(%q, %q, %d) = %d, %v, %v; want %d, %v, %q", tt.in, tt.key, tt.skip, v, ok, err, tt.v, tt.ok, tt.err)
		}
	}
}

var limitTests = []struct {
	in  string
	n   int64
	ok  bool
	err string
}{
	{"1073741824\n", 1 << 30, true, ""},
	{"0\n", 0, true, ""},
	{"max\n", 0, false, ""},
	{"max", 0, false, ""},
	// v1's "no limit": PAGE_COUNTER_MAX pages of 4 KiB, of 64 KiB, and
	// LONG_MAX (before Linux 3.19).
	{"9223372036854771712\n", 0, false, ""},
	{"9223372036854710272\n", 0, false, ""},
	{"9223372036854775807\n", 0, false, ""},
	{"1152921504606846975\n", 1<<60 - 1, true, ""},
	{"", 0, false, `limit "" is not a byte count or "max": syntax error`},
	{"MAX\n", 0, false, `limit "MAX" is not a byte count or "max": syntax error`},
	{"-1\n", 0, false, `limit "-1" is not a byte count or "max": syntax error`},
	{"12 kB\n", 0, false, `limit "12 kB" is not a byte count or "max": syntax error`},
	{"9223372036854775808\n", 0, false, `limit "9223372036854775808" is not a byte count or "max": syntax error`},
}

func TestParseLimit(t *testing.T) {
	for _, tt := range limitTests {
		n, ok, err := parseLimit([]byte(tt.in))
		if n != tt.n || ok != tt.ok || errString(err) != tt.err {
			t.Errorf("parseLimit(%q) = %d, %v, %v; want %d, %v, %q", tt.in, n, ok, err, tt.n, tt.ok, tt.err)
		}
	}
}

func TestFileError(t *testing.T) {
	e := &FileError{Path: "/proc/meminfo", Err: fmt.Errorf("x: %w", ErrSyntax)}
	if got := e.Error(); got != "/proc/meminfo: x: syntax error" || !errors.Is(e, ErrSyntax) {
		t.Errorf("FileError = %q", got)
	}
	e.Text = "12 kB"
	if got := e.Error(); got != `/proc/meminfo: "12 kB": x: syntax error` {
		t.Errorf("FileError with text = %q", got)
	}
}

// FuzzParsePressure: no input panics; an error wraps ErrSyntax; what
// parses holds no negative, NaN or infinite share, and
// printing it back in the kernel's format gives the same Pressure.
func FuzzParsePressure(f *testing.F) {
	for _, tt := range pressureTests {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parsePressure(b)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("parsePressure(%q): %v does not wrap ErrSyntax", b, err)
			}
			return
		}
		if p.Some10 < 0 || p.Full10 < 0 || p.SomeTotal < 0 || p.FullTotal < 0 ||
			math.IsNaN(p.Some10) || math.IsNaN(p.Full10) || math.IsInf(p.Some10, 0) || math.IsInf(p.Full10, 0) {
			t.Fatalf("parsePressure(%q) = %+v", b, p)
		}
		text := fmt.Sprintf("some avg10=%v avg60=0.00 avg300=0.00 total=%d\nfull avg10=%v avg60=0.00 avg300=0.00 total=%d\n",
			p.Some10, p.SomeTotal, p.Full10, p.FullTotal)
		if q, err := parsePressure([]byte(text)); q != p || err != nil {
			t.Fatalf("parsePressure(%q) = %+v; printed %q parses as %+v, %v", b, p, text, q, err)
		}
	})
}

// FuzzParseKeyed: no input panics; a value found is never negative, and
// the line "key value" put first gives that value back.
func FuzzParseKeyed(f *testing.F) {
	for _, tt := range keyedTests {
		f.Add([]byte(tt.in), tt.key, uint8(tt.skip))
	}
	f.Fuzz(func(t *testing.T, b []byte, key string, skip uint8) {
		n := int(skip % 4)
		v, ok, err := parseKeyed(b, key, n)
		if err != nil && !errors.Is(err, ErrSyntax) || v < 0 || (!ok && v != 0) {
			t.Fatalf("parseKeyed(%q, %q, %d) = %d, %v, %v", b, key, n, v, ok, err)
		}
		// A key found is one whole field of a line: not empty, no space.
		if !ok {
			return
		}
		line := strings.Repeat("x ", n) + key + " " + fmt.Sprint(v) + "\n"
		if w, ok, err := parseKeyed(append([]byte(line), b...), key, n); w != v || !ok || err != nil {
			t.Fatalf("parseKeyed(%q, %q, %d) = %d, %v, %v; want %d", line, key, n, w, ok, err, v)
		}
	})
}

// FuzzParseLimit: no input panics; a limit is below v1's "no limit" and
// prints back to itself.
func FuzzParseLimit(f *testing.F) {
	for _, tt := range limitTests {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok, err := parseLimit(b)
		if err != nil {
			if !errors.Is(err, ErrSyntax) || ok || n != 0 {
				t.Fatalf("parseLimit(%q) = %d, %v, %v", b, n, ok, err)
			}
			return
		}
		if !ok {
			if n != 0 {
				t.Fatalf("parseLimit(%q) = %d, no limit", b, n)
			}
			return
		}
		if n < 0 || n >= unlimitedV1 {
			t.Fatalf("parseLimit(%q) = %d", b, n)
		}
		if m, ok, err := parseLimit([]byte(fmt.Sprint(n) + "\n")); m != n || !ok || err != nil {
			t.Fatalf("parseLimit(%q) = %d; printed back: %d, %v, %v", b, n, m, ok, err)
		}
	})
}

func TestStatmResident(t *testing.T) {
	page := int64(os.Getpagesize())
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"10000 2560 300 100 0 2000 0\n", 2560 * page, true},
		{"7 0 0 0 0 0 0", 0, true},
		{"10000\n", 0, false},
		{"", 0, false},
		{"1 x 3", 0, false},
	} {
		if got, ok := statmResident([]byte(c.in)); got != c.want || ok != c.ok {
			t.Errorf("statmResident(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}
