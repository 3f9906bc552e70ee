package buildexec

import (
	"slices"
	"strings"
	"testing"
)

func TestDropJobs(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"make", "make"},
		{"make -j", "make"},
		{"make -j8 all", "make all"},
		{"make -j 8 all", "make all"},
		{"make -j all", "make all"},
		{"make --jobs=4 -k", "make -k"},
		{"make --jobs 4 -k", "make -k"},
		{"make --jobs -C dir", "make -C dir"},
		{"make -kj4", "make -kj4"},                   // a cluster is kept
		{"make -jx", "make -jx"},                     // not a job option
		{"make CC=gcc -- -j2", "make CC=gcc -- -j2"}, // after --: targets
		{"make -j4 -j", "make"},
	} {
		got := strings.Join(DropJobs(strings.Fields(c.in)), " ")
		if got != c.want {
			t.Errorf("DropJobs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzDropJobs: the result is the arguments in order with some left out,
// the program kept, and no standalone job option left before "--".
func FuzzDropJobs(f *testing.F) {
	f.Add("make -j 8 -k --jobs=3 all -- -j")
	f.Fuzz(func(t *testing.T, s string) {
		args := append([]string{"make"}, strings.Fields(s)...)
		out := DropJobs(args)
		if len(out) == 0 || out[0] != "make" {
			t.Fatalf("program lost: %q", out)
		}
		k := 0
		for _, a := range args {
			if k < len(out) && out[k] == a {
				k++
			}
		}
		if k != len(out) {
			t.Fatalf("%q is not a subsequence of %q", out, args)
		}
		end := slices.Index(out, "--")
		if end < 0 {
			end = len(out)
		}
		for _, a := range out[1:end] {
			if a == "-j" || a == "--jobs" || strings.HasPrefix(a, "--jobs=") && isNumber(a[7:]) || strings.HasPrefix(a, "-j") && isNumber(a[2:]) {
				t.Fatalf("job option %q left in %q", a, out)
			}
		}
	})
}
