package topology

import (
	"errors"
	"slices"
	"strconv"
	"testing"
)

// errString renders an error for exact comparison; "" for nil.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestParseCacheSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  string
		is   error
	}{
		{"32K", 32 << 10, "", nil},
		{"1024K\n", 1 << 20, "", nil},
		{"5118K", 5118 << 10, "", nil},
		{"8M", 8 << 20, "", nil},
		{"1G", 1 << 30, "", nil},
		{"48KiB", 48 << 10, "", nil},
		{"0K", 0, "", nil},
		{"", 0, "size does not start with a number: invalid syntax", ErrSyntax},
		{"K", 0, "size does not start with a number: invalid syntax", ErrSyntax},
		{"32", 0, `size unit "" is not K, M or G: invalid syntax`, ErrSyntax},
		{"32Q", 0, `size unit "Q" is not K, M or G: invalid syntax`, ErrSyntax},
		{"-4K", 0, "size does not start with a number: invalid syntax", ErrSyntax},
		{"99999999999999999999K", 0, "size number: value out of range", ErrRange},
		{"9007199254740992K", 0, "size overflows: value out of range", ErrRange},
	}
	for _, tt := range tests {
		got, err := parseCacheSize(tt.in)
		if got != tt.want || errString(err) != tt.err || (tt.is != nil && !errors.Is(err, tt.is)) {
			t.Errorf("parseCacheSize(%q) = %d, %v; want %d, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestParseDistanceRow(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		err  string
	}{
		{"10 20 20 20\n", []int{10, 20, 20, 20}, ""},
		{"10", []int{10}, ""},
		{"  10\t21  ", []int{10, 21}, ""},
		{"", nil, "empty distance row: missing field"},
		{"10 x", nil, `distance 1 "x" is not a number: invalid syntax`},
		{"10 -1", nil, "distance 1 is -1, outside 0..65536: value out of range"},
		{"10 65537", nil, "distance 1 is 65537, outside 0..65536: value out of range"},
		{"10,20", nil, `distance 0 "10,20" is not a number: invalid syntax`},
	}
	for _, tt := range tests {
		got, err := parseDistanceRow(tt.in)
		if !slices.Equal(got, tt.want) || errString(err) != tt.err {
			t.Errorf("parseDistanceRow(%q) = %v, %v; want %v, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestParseMemTotal(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		line string
		err  string
	}{
		{"MemTotal:       16384 kB\nMemFree: 1 kB\n", 16384 << 10, "", ""},
		{"Node 3 MemTotal:  67108864 kB\n", 67108864 << 10, "", ""},
		{"Node 0 MemFree: 1 kB\nNode 0 MemTotal: 0 kB\n", 0, "", ""},
		{"MemFree: 1 kB\n", 0, "", "no MemTotal line: missing field"},
		{"", 0, "", "no MemTotal line: missing field"},
		{"Node 0 MemTotal: lots kB\n", 0, "Node 0 MemTotal: lots kB", `MemTotal "lots" is not a number of kB: invalid syntax`},
		{"MemTotal: 5 MB\n", 0, "MemTotal: 5 MB", `MemTotal is not "N kB": invalid syntax`},
		{"MemTotal: 5\n", 0, "MemTotal: 5", `MemTotal is not "N kB": invalid syntax`},
		{"Total MemTotal: 5 kB\n", 0, "Total MemTotal: 5 kB", "unexpected prefix before MemTotal: invalid syntax"},
		{"MemTotal: -5 kB\n", 0, "MemTotal: -5 kB", `MemTotal "-5" is not a number of kB: invalid syntax`},
		{"MemTotal: 9223372036854775807 kB\n", 0, "MemTotal: 9223372036854775807 kB", "MemTotal overflows: value out of range"},
	}
	for _, tt := range tests {
		got, line, err := parseMemTotal([]byte(tt.in))
		if got != tt.want || line != tt.line && tt.err != "" || errString(err) != tt.err {
			t.Errorf("parseMemTotal(%q) = %d, %q, %v; want %d, %q, %q", tt.in, got, line, err, tt.want, tt.line, tt.err)
		}
	}
}

func TestParseInt(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
		err  string
	}{
		{"0\n", 0, ""},
		{"-1", -1, ""},
		{" 42 ", 42, ""},
		{"", 0, `strconv.Atoi: parsing "": invalid syntax`},
		{"4x", 0, `strconv.Atoi: parsing "4x": invalid syntax`},
	} {
		got, err := parseInt(tt.in)
		if got != tt.want || errString(err) != tt.err {
			t.Errorf("parseInt(%q) = %d, %v; want %d, %q", tt.in, got, err, tt.want, tt.err)
		}
		if tt.err != "" && !errors.Is(err, strconv.ErrSyntax) {
			t.Errorf("parseInt(%q) error %v is not strconv.ErrSyntax", tt.in, err)
		}
	}
}

func TestParseNumbered(t *testing.T) {
	for _, tt := range []struct {
		name string
		want int
		ok   bool
	}{
		{"cpu0", 0, true},
		{"cpu127", 127, true},
		{"cpufreq", 0, false},
		{"cpuidle", 0, false},
		{"cpu", 0, false},
		{"cpu01", 0, false},
		{"cpu-1", 0, false},
		{"cpu99999999", 0, false},
		{"cpu524289", 0, false},
		{"node72", 72, true},
	} {
		prefix := "cpu"
		if tt.name[0] == 'n' {
			prefix = "node"
		}
		got, ok := parseNumbered(tt.name, prefix)
		if got != tt.want || ok != tt.ok {
			t.Errorf("parseNumbered(%q) = %d, %v; want %d, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseCPUInfo(t *testing.T) {
	tests := []struct {
		name, in string
		want     cpuinfo
		line     string
		err      string
	}{
		{"x86", "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 21\nmodel\t\t: 1\nmodel name\t: AMD Opteron(TM) Processor 6276\nflags\t\t: fpu lm sse2\n\nprocessor\t: 1\nmodel name\t: other\n",
			cpuinfo{vendor: "AuthenticAMD", model: "AMD Opteron(TM) Processor 6276", family: 21, modelID: 1, archHint: "x86_64"}, "", ""},
		{"i686", "processor : 0\nvendor_id : GenuineIntel\nflags : fpu sse2\n",
			cpuinfo{vendor: "GenuineIntel", family: -1, modelID: -1, archHint: "i686"}, "", ""},
		{"ia64", "processor  : 0\nvendor     : GenuineIntel\narch       : IA-64\nfamily     : 32\nmodel      : 1\nmodel name : Dual-Core Intel(R) Itanium(R) Processor 9140N\n",
			cpuinfo{vendor: "GenuineIntel", model: "Dual-Core Intel(R) Itanium(R) Processor 9140N", family: 32, modelID: 1, archHint: "ia64"}, "", ""},
		{"ia64 family name", "vendor : GenuineIntel\narch : IA-64\nfamily : Itanium 2\n",
			cpuinfo{vendor: "GenuineIntel", family: -1, modelID: -1, archHint: "ia64"}, "", ""},
		{"power", "processor\t: 0\ncpu\t\t: POWER9, altivec supported\n",
			cpuinfo{model: "POWER9, altivec supported", family: -1, modelID: -1, archHint: "ppc64"}, "", ""},
		{"arm64", "processor\t: 0\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd87\n",
			cpuinfo{family: -1, modelID: -1, archHint: "aarch64"}, "", ""},
		{"arm", "processor\t: 0\nCPU architecture: 7\nHardware\t: ST-Ericsson MOP500 platform\n",
			cpuinfo{family: -1, modelID: -1, archHint: "arm"}, "", ""},
		{"s390", "vendor_id       : IBM/S390\n# processors    : 20\nprocessor 0: version = FF\n",
			cpuinfo{vendor: "IBM/S390", family: -1, modelID: -1, archHint: "s390x"}, "", ""},
		{"empty", "", cpuinfo{family: -1, modelID: -1}, "", ""},
		{"bad family", "vendor_id : GenuineIntel\ncpu family : six\n",
			cpuinfo{vendor: "GenuineIntel", family: -1, modelID: -1}, "cpu family : six", "cpu family is not a number: invalid syntax"},
	}
	for _, tt := range tests {
		got, line, err := parseCPUInfo([]byte(tt.in))
		if got != tt.want || line != tt.line || errString(err) != tt.err {
			t.Errorf("%s: parseCPUInfo = %+v, %q, %v; want %+v, %q, %q", tt.name, got, line, err, tt.want, tt.line, tt.err)
		}
	}
}

func TestParseStatusLists(t *testing.T) {
	in := "Name:\tcat\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\nMems_allowed_list:\t0\n"
	c, m, hc, hm := parseStatusLists([]byte(in))
	if c != "0-1" || m != "0" || !hc || !hm {
		t.Errorf("parseStatusLists = %q, %q, %v, %v", c, m, hc, hm)
	}
	if _, _, hc, hm := parseStatusLists([]byte("Name: x\n")); hc || hm {
		t.Errorf("parseStatusLists without lists reports them")
	}
}

func TestParseArchitectureLine(t *testing.T) {
	in := "OSName: Linux\nOSRelease: dummy\nArchitecture: s390x\n"
	if got := parseArchitectureLine([]byte(in)); got != "s390x" {
		t.Errorf("parseArchitectureLine = %q", got)
	}
	if got := parseArchitectureLine([]byte("OSName: Linux\n")); got != "" {
		t.Errorf("parseArchitectureLine without the line = %q", got)
	}
}

func TestParseNvidiaNUMAStatus(t *testing.T) {
	for _, tt := range []struct {
		in   string
		node int
		ok   bool
		line string
		err  string
	}{
		{"Node:                          255\nStatus:                        online_movable\n", 255, true, "", ""},
		{"Node: -1\n", 0, false, "", ""},
		{"Status: none\n", 0, false, "", ""},
		{"Node: x\n", 0, false, "Node: x", `Node "x" is not a number: invalid syntax`},
	} {
		node, ok, line, err := parseNvidiaNUMAStatus([]byte(tt.in))
		if node != tt.node || ok != tt.ok || line != tt.line || errString(err) != tt.err {
			t.Errorf("parseNvidiaNUMAStatus(%q) = %d, %v, %v; want %d, %v, %q", tt.in, node, ok, err, tt.node, tt.ok, tt.err)
		}
	}
}

func TestParseCacheType(t *testing.T) {
	for in, want := range map[string]CacheType{"Data": Data, "Instruction": Instruction, "Unified": Unified} {
		if got, err := parseCacheType(in); got != want || err != nil {
			t.Errorf("parseCacheType(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := parseCacheType("Trace"); errString(err) != "cache type is not Data, Instruction or Unified: invalid syntax" {
		t.Errorf("parseCacheType(Trace) error = %v", err)
	}
}
