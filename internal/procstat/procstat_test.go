package procstat

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"testing"
)

func TestParse(t *testing.T) {
	line := []byte("4242 (a) (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 7 3 1 2 20 0 1 0 123456 1000 10\n")
	s, err := Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	if s.PID != 4242 || string(s.Comm) != "a) (b) c" || s.State() != 'S' {
		t.Errorf("Parse = pid %d comm %q state %c", s.PID, s.Comm, s.State())
	}
	ppid, err1 := s.Int(4)
	utime, err2 := s.Uint(14)
	start := string(s.Field(22))
	if err1 != nil || err2 != nil || ppid != 17 || utime != 7 || start != "123456" {
		t.Errorf("ppid %d (%v), utime %d (%v), start %q", ppid, err1, utime, err2, start)
	}
	if s.Field(99) != nil || s.Field(2) != nil {
		t.Error("a field past the end or before 3 is not nil")
	}
	if _, err := s.Uint(99); !errors.Is(err, ErrMalformed) {
		t.Errorf("Uint of a missing field: %v", err)
	}
}

func TestParseMalformed(t *testing.T) {
	for _, in := range []string{"", "12", "(x) S 1", "12 (x", "12 x) S", "a (x) S 1", "12 (x)", "12 (x) SS 1"} {
		if _, err := Parse([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) = %v, want ErrMalformed", in, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 9 10 11"))
	f.Add([]byte("7 ()) Z 1 7 7"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err != nil {
			return
		}
		_ = s.State()
		for n := range 30 {
			s.Field(n)
			s.Uint(n)
			s.Int(n)
		}
		if got := strconv.Itoa(s.PID); len(got) == 0 {
			t.Fatal("empty pid")
		}
	})
}

func TestRead(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, buf := range [][]byte{nil, make([]byte, 0, 8), make([]byte, 0, 4096)} {
		b, err := Read("/proc", os.Getpid(), buf)
		if err != nil {
			t.Fatal(err)
		}
		st, err := Parse(b)
		if err != nil {
			t.Fatalf("Parse(%q): %v", b, err)
		}
		if st.PID != os.Getpid() {
			t.Errorf("pid %d, want %d", st.PID, os.Getpid())
		}
	}
	if _, err := Read(t.TempDir(), 1, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of a missing file: %v, want fs.ErrNotExist", err)
	}
}
