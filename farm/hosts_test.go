package farm

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseHosts(t *testing.T) {
	h := func(name string, port, slots int, opts ...string) Host {
		return Host{Name: name, Port: port, Slots: slots, Options: opts}
	}
	tests := []struct {
		in   string
		want []Host
		err  error
	}{
		{"a", []Host{h("a", 3632, 4)}, nil},
		{"a/8 b:4000/16 c:4001", []Host{h("a", 3632, 8), h("b", 4000, 16), h("c", 4001, 4)}, nil},
		{"10.0.0.1/2,lzo", []Host{h("10.0.0.1", 3632, 2, "lzo")}, nil},
		{"[::1]:3633/3,lzo", []Host{h("::1", 3633, 3, "lzo")}, nil},
		{"[::1]:3633/3,lzo,cpp", nil, ErrUnsupported},  // pump mode
		{"old/5:3700", []Host{h("old", 3700, 5)}, nil}, // OLDSTYLE_TCP_HOST
		{"localhost/2 --randomize --localslots=4 --localslots_cpp=8 x", []Host{h("x", 3632, 4)}, nil},
		{"# farm\na/2 # first\n\n  b/3\n", []Host{h("a", 3632, 2), h("b", 3632, 3)}, nil},
		{"", nil, nil},
		{"a:0", nil, ErrSyntax},
		{"a:70000", nil, ErrSyntax},
		{"a/0", nil, ErrSyntax},
		{"a/x", nil, ErrSyntax},
		{"a:1:2", nil, ErrSyntax},
		{"/4", nil, ErrSyntax},
		{"[::1", nil, ErrSyntax},
		{"[nothost]", nil, ErrSyntax},
		{"a,", nil, ErrSyntax},
		{"a a", nil, ErrSyntax},
		{"@build1/4", nil, ErrUnsupported},
		{"me@build1", nil, ErrUnsupported},
		{"+zeroconf", nil, ErrUnsupported},
	}
	for _, tc := range tests {
		got, err := ParseHosts("test", tc.in)
		if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
			t.Errorf("ParseHosts(%q) error %v, want %v", tc.in, err, tc.err)
			continue
		}
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Source != "test" {
				t.Errorf("ParseHosts(%q) error %#v is not a *ParseError naming the source", tc.in, err)
			}
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseHosts(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// String, DistccHosts and DistccHostsPreprocessing write what ParseHosts
// reads.
func TestHostRoundTrip(t *testing.T) {
	for _, in := range []string{"a:3632/4", "[::1]:3633/3,lzo", "10.1.2.3:99/16,lzo"} {
		hs, err := ParseHosts("t", in)
		if err != nil || len(hs) != 1 {
			t.Fatalf("%q: %v", in, err)
		}
		if hs[0].String() != in {
			t.Errorf("String() = %q, want %q", hs[0].String(), in)
		}
		back, err := ParseHosts("t", hs[0].DistccHosts())
		if err != nil || back[0].Slots != 1 || back[0].Addr() != hs[0].Addr() {
			t.Errorf("DistccHosts() = %q: %v %+v", hs[0].DistccHosts(), err, back)
		}
		cpp := hs[0].DistccHostsPreprocessing(2)
		back, err = ParseHosts("t", cpp)
		if err != nil || len(back) != 1 || back[0].Slots != 1 || back[0].Addr() != hs[0].Addr() || !strings.HasPrefix(cpp, "--localslots_cpp=2 ") {
			t.Errorf("DistccHostsPreprocessing(2) = %q: %v %+v", cpp, err, back)
		}
	}
}

func TestParseErrorNamesLine(t *testing.T) {
	_, err := ParseHosts("hosts.txt", "a/2\nb:x\n")
	want := `farm: hosts.txt:2: host "b:x": bad host syntax: port "x" (want 1-65535)`
	if err == nil || err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestLoadHosts(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvHosts {
				return v
			}
			return ""
		}
	}
	file := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(file, []byte("# comment\nf1/2\nf2/2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		spec, env string
		want      []string
		bad       bool
	}{
		{"env", "e1/3 e2", []string{"e1:3632/3", "e2:3632/4"}, false},
		{"", "e1", []string{"e1:3632/4"}, false},
		{"a:1/1", "e1", []string{"a:1/1"}, false},
		{file, "", []string{"f1:3632/2", "f2:3632/2"}, false},
		{"env", "", nil, true},
		{"localhost/4", "", nil, true}, // no remote host
		{"a:b", "", nil, true},
		// $DISTCC_HOSTS as distcc reads it: bad entries are warned
		// about and skipped; on the command line they are errors.
		{"env", "bogus:xx e1 e1 x,cpp", []string{"e1:3632/4"}, false},
		{"bogus:xx e1", "", nil, true},
		{"env", "bogus:xx", nil, true}, // nothing left
	}
	for _, tc := range tests {
		var warned []string
		hs, err := LoadHosts(tc.spec, env(tc.env), func(err error) { warned = append(warned, err.Error()) })
		if tc.spec == "env" && tc.env == "bogus:xx e1 e1 x,cpp" && len(warned) != 3 {
			t.Errorf("LoadHosts(env %q) warned %q, want 3 warnings", tc.env, warned)
		}
		if (err != nil) != tc.bad {
			t.Errorf("LoadHosts(%q) error %v", tc.spec, err)
			continue
		}
		var got []string
		for _, h := range hs {
			got = append(got, h.String())
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("LoadHosts(%q) = %v, want %v", tc.spec, got, tc.want)
		}
	}
}

func FuzzParseHosts(f *testing.F) {
	for _, s := range []string{"a/4 b:1/2,lzo", "[::1]:9/1", "# c\nx", "a:/", "[", "@", "a//1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hs, err := ParseHosts("fuzz", s)
		if err != nil {
			return
		}
		for _, h := range hs {
			back, err := ParseHosts("fuzz", h.String())
			if err != nil || len(back) != 1 || !reflect.DeepEqual(back[0], h) {
				t.Errorf("%q: host %+v does not round-trip via %q: %v %+v", s, h, h.String(), err, back)
			}
		}
	})
}
