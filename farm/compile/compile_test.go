package compile

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		cmd      string
		src, out string // "" when not a farm compile
	}{
		{"gcc -O2 -c foo.c -o foo.o", "foo.c", "foo.o"},
		{"cc -c -ofoo.o foo.c", "foo.c", "foo.o"},
		{"/usr/bin/clang -Iinc -DX=1 -c src/a.cpp -o obj/a.o", "src/a.cpp", "obj/a.o"},
		{"x86_64-linux-gnu-g++-12 -std=c++20 -c a.cc -o a.o -MMD -MF a.d", "a.cc", "a.o"},
		{"clang++-16 -c a.cxx -o a.o", "a.cxx", "a.o"},
		{"c++ -include pch.h -isystem /opt/inc -c a.C -o a.o", "a.C", "a.o"},
		{"gcc -c pre.i -o pre.o", "pre.i", "pre.o"},
		{"gcc -o prog a.o b.o", "", ""},                           // link
		{"gcc -c a.c", "", ""},                                    // no -o
		{"gcc -c a.c b.c -o x.o", "", ""},                         // two sources
		{"gcc -E a.c -o a.i", "", ""},                             // preprocess only
		{"gcc -S -c a.c -o a.s", "", ""},                          // assembly out
		{"gcc -c -x c - -o a.o", "", ""},                          // stdin, forced language
		{"gcc -c a.S -o a.o", "", ""},                             // assembler source
		{"gcc -flto -c a.c -o a.o", "", ""},                       // LTO
		{"gcc -fprofile-use=x -c a.c -o a.o", "", ""},             // profile data is local
		{"ccache gcc -c a.c -o a.o", "", ""},                      // a wrapper
		{"distcc gcc -c a.c -o a.o", "", ""},                      // already distcc
		{"ld -o a a.o", "", ""},                                   // not a compiler
		{"gcc -c a.c -o", "", ""},                                 // dangling -o
		{"gcc -c a.c -o a.o -o b.o", "", ""},                      // two outputs
		{"gcc-12 -O2 -I inc -D NAME -c a.c -o a.o", "a.c", "a.o"}, // separated values
	}
	for _, tc := range tests {
		c, ok := Parse(strings.Fields(tc.cmd))
		if ok != (tc.src != "") || c.Source != tc.src || c.Output != tc.out {
			t.Errorf("Parse(%q) = %q %q %v, want %q %q", tc.cmd, c.Source, c.Output, ok, tc.src, tc.out)
		}
	}
	if _, ok := ParseMarked(strings.Fields("mycc-wrapper -c a.c -o a.o")); !ok {
		t.Error("ParseMarked refused a marked wrapper")
	}
	if _, ok := ParseMarked(strings.Fields("mycc-wrapper -o prog a.o")); ok {
		t.Error("ParseMarked accepted a link")
	}
}

// TestIsCompilerName checks the matcher against the regular expression it
// stands for.
func TestIsCompilerName(t *testing.T) {
	re := regexp.MustCompile(`^([A-Za-z0-9_.]+-)*(cc|gcc|clang|c\+\+|g\+\+|clang\+\+)(-[0-9][0-9.]*)?$`)
	names := []string{
		"cc", "gcc", "clang", "c++", "g++", "clang++", "gcc-12", "clang-16.0", "clang++-16",
		"x86_64-linux-gnu-gcc", "x86_64-linux-gnu-g++-12", "arm.v7_a-cc", "gcc-12-cc", "a-b-c-gcc-1.2.3",
		"", "-", "gcc-", "-gcc", "a--gcc", "gcc-x", "gcc-.1", "gcc-1-2", "ccache", "distcc", "gcc12",
		"cc1", "ld", "x+y-gcc", "GCC", "gcc-12.", "c++-", "g++-1a", "as-cc-9", "clang-cl", "icc",
	}
	for _, n := range names {
		if got, want := IsCompilerName(n), re.MatchString(n); got != want {
			t.Errorf("IsCompilerName(%q) = %v, want %v", n, got, want)
		}
	}
}

func FuzzIsCompilerName(f *testing.F) {
	re := regexp.MustCompile(`^([A-Za-z0-9_.]+-)*(cc|gcc|clang|c\+\+|g\+\+|clang\+\+)(-[0-9][0-9.]*)?$`)
	for _, s := range []string{"gcc", "x86_64-linux-gnu-g++-12", "gcc-1-2", "a--cc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, n string) {
		if got, want := IsCompilerName(n), re.MatchString(n); got != want {
			t.Errorf("IsCompilerName(%q) = %v, want %v", n, got, want)
		}
	})
}

func TestCompileSteps(t *testing.T) {
	tests := []struct {
		cmd, pre, remote, ext string
	}{
		{"gcc -O2 -Iinc -c src/a.c -o obj/a.o",
			"gcc -O2 -Iinc -E src/a.c -o /t/a.i",
			"gcc -O2 -Iinc -c /t/a.i -o obj/a.o", ".i"},
		{"g++ -MMD -c a.cc -oa.o",
			"g++ -MMD -E a.cc -o/t/a.ii -MF a.d -MT a.o",
			"g++ -c /t/a.ii -oa.o", ".ii"},
		{"gcc -MD -MF x.d -MT t -c a.c -o a.o",
			"gcc -MD -MF x.d -MT t -E a.c -o /t/a.i",
			"gcc -c /t/a.i -o a.o", ".i"},
	}
	for _, tc := range tests {
		c, ok := Parse(strings.Fields(tc.cmd))
		if !ok {
			t.Fatalf("%q not recognised", tc.cmd)
		}
		if ext := c.PreprocessedExt(); ext != tc.ext {
			t.Errorf("%q: ext %q, want %q", tc.cmd, ext, tc.ext)
		}
		pre := "/t/a" + tc.ext
		if got := c.PreprocessArgs(pre); !reflect.DeepEqual(got, strings.Fields(tc.pre)) {
			t.Errorf("%q: PreprocessArgs = %q, want %q", tc.cmd, got, tc.pre)
		}
		if got := c.RemoteArgs(pre); !reflect.DeepEqual(got, strings.Fields(tc.remote)) {
			t.Errorf("%q: RemoteArgs = %q, want %q", tc.cmd, got, tc.remote)
		}
		if strings.Join(c.Args, " ") != tc.cmd {
			t.Errorf("%q: Args changed to %q", tc.cmd, c.Args)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		line string
		want Kind
	}{
		{"gcc -c a.c -o a.o", Compile},
		{"/usr/bin/x86_64-linux-gnu-g++-12 -O2 -S a.cc", Compile},
		{"clang -E a.c", Compile},
		{"cc a.o b.o -o prog", Link},
		{"g++ -shared -o lib.so a.o", Link},
		{"ld -o prog a.o", Link},
		{"/usr/bin/ld.gold a.o", Link},
		{"aarch64-linux-gnu-ld a.o", Link},
		{"mold -o p a.o", Link},
		{"sh -c 'cc -c a.c'", Other},
		{"python3 gen.py", Other},
		{"ccache gcc -c a.c", Other},
		{"", Other},
	} {
		if got := Classify(strings.Fields(tt.line)); got != tt.want {
			t.Errorf("Classify(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}
