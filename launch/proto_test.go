package launch

import (
	"errors"
	"syscall"
	"testing"
)

var parseTests = []struct {
	in   string
	verb string
	kv   []string
	err  error
}{
	{"ns1 ping\n", "ping", nil, nil},
	{"ns1 acquire build=make-1-2 out=/a%20b.o\n", "acquire", []string{"build", "make-1-2", "out", "/a b.o"}, nil},
	{"ns1 done rss_kib=123", "done", []string{"rss_kib", "123"}, nil},
	{"ns1 x k=", "x", []string{"k", ""}, nil},
	{"ns2 acquire\n", "", nil, ErrVersion},
	{"GET / HTTP/1.1\n", "", nil, ErrVersion},
	{"", "", nil, ErrVersion},
	{"ns1\n", "", nil, ErrMalformed},
	{"ns1 Ping\n", "", nil, ErrMalformed},
	{"ns1 ping  k=v\n", "", nil, ErrMalformed},
	{"ns1 ping k\n", "", nil, ErrMalformed},
	{"ns1 ping K=v\n", "", nil, ErrMalformed},
	{"ns1 ping k=%4\n", "", nil, ErrMalformed},
	{"ns1 ping k=%zz\n", "", nil, ErrMalformed},
	{"ns1 ping k=a=b\n", "", nil, ErrMalformed},
	{"ns1 ping k=\x01\n", "", nil, ErrMalformed},
}

func TestParseMsg(t *testing.T) {
	for _, tt := range parseTests {
		m, err := ParseMsg([]byte(tt.in))
		if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
			t.Errorf("ParseMsg(%q) error = %v, want %v", tt.in, err, tt.err)
			continue
		}
		if err != nil {
			continue
		}
		want := NewMsg(tt.verb, tt.kv...)
		if m.String() != want.String() {
			t.Errorf("ParseMsg(%q) = %q, want %q", tt.in, m, want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	m := NewMsg("acquire", "out", "/tmp/x y/=%\n\xff.o", "build", "")
	got, err := ParseMsg(m.Append(nil))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := got.Get("out"); v != "/tmp/x y/=%\n\xff.o" {
		t.Errorf("out = %q", v)
	}
}

// FuzzParseMsg: no input crashes the parser, and whatever parses encodes
// back to a line that parses to the same message.
func FuzzParseMsg(f *testing.F) {
	for _, tt := range parseTests {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMsg(b)
		if err != nil {
			return
		}
		again, err := ParseMsg(m.Append(nil))
		if err != nil || again.String() != m.String() {
			t.Fatalf("round trip of %q: %q, %v", b, again, err)
		}
	})
}

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		prog string
		args []string
		kind Kind
		out  string
	}{
		{"/usr/bin/gcc", []string{"-O2", "-c", "a.c", "-o", "obj/a.o"}, Compile, "obj/a.o"},
		{"gcc", []string{"-c", "src/b.cc"}, Compile, "b.o"},
		{"gcc", []string{"-oprog", "a.o", "b.o"}, Link, "prog"},
		{"ld", []string{"-o", "vmlinux", "-c", "script"}, Link, "vmlinux"},
		{"ld.bfd", []string{"a.o"}, Link, ""},
	} {
		k, out := Classify(tt.prog, tt.args)
		if k != tt.kind || out != tt.out {
			t.Errorf("Classify(%s %q) = %s %q, want %s %q", tt.prog, tt.args, k, out, tt.kind, tt.out)
		}
	}
}

func TestParseStat(t *testing.T) {
	line := "4242 (my (odd) make) S 17 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 1 1\n"
	st, err := parseStat([]byte(line))
	if err != nil || st.comm != "my (odd) make" || st.ppid != 17 || st.start != "98765" {
		t.Errorf("parseStat = %+v, %v", st, err)
	}
	if _, err := parseStat([]byte("12 (x) S 1")); err == nil {
		t.Error("parseStat of a short line: no error")
	}
}

func TestFindProgramSkipsSelf(t *testing.T) {
	dir := t.TempDir()
	self := SelfStat()
	if self == nil {
		t.Skip("no /proc/self/exe")
	}
	exe := "/proc/self/exe"
	var st syscall.Stat_t
	syscall.Stat(exe, &st)
	// A directory whose "true" is this test binary comes first in PATH.
	if err := linkSelf(dir + "/true"); err != nil {
		t.Skip(err)
	}
	p, err := FindProgram("true", dir+":/usr/bin:/bin", self)
	if err != nil || p == dir+"/true" {
		t.Fatalf("FindProgram = %q, %v; want the real true", p, err)
	}
	if p, err := FindProgram(dir+"/true", dir+":/usr/bin:/bin", self); err != nil || p == dir+"/true" {
		t.Errorf("FindProgram of a path to itself = %q, %v; want the real true", p, err)
	}
}
