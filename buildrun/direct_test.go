package buildrun

import (
	"slices"
	"testing"
)

func TestDirectArgv(t *testing.T) {
	for _, tt := range []struct {
		line string
		want []string // nil: needs the shell
	}{
		{"true", []string{"true"}},
		{"gcc -c a.c -o a.o", []string{"gcc", "-c", "a.c", "-o", "a.o"}},
		{`gzip -9 "b c.log"`, []string{"gzip", "-9", "b c.log"}},
		{`printf '%s\n' x`, []string{"printf", `%s\n`, "x"}},
		{"cc -DX=1 a.c", []string{"cc", "-DX=1", "a.c"}},
		{"./a=b", []string{"./a=b"}},
		{"echo a > f", nil},
		{"a && b", nil},
		{"echo $HOME", nil},
		{"ls *.c", nil},
		{"cd sub", nil},
		{"exit 3", nil},
		{"CC=gcc make", nil},
		{"{ echo a; }", nil},
		{"! false", nil},
		{"if true", nil},
		{"echo 'open", nil},
		{"", nil},
		{`""`, nil},
		{"# comment", nil},
		{"echo a # comment", nil},
	} {
		got, ok := directArgv(tt.line)
		if ok != (tt.want != nil) || !slices.Equal(got, tt.want) {
			t.Errorf("directArgv(%q) = %q, %v; want %q", tt.line, got, ok, tt.want)
		}
	}
}

func FuzzDirectArgv(f *testing.F) {
	for _, s := range []string{"true", "a b", "A=1 b", "cd x", `"q"`, "a|b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		words, ok := directArgv(line)
		if ok && (len(words) == 0 || words[0] == "" || shellWords[words[0]] || isAssignment(words[0])) {
			t.Fatalf("directArgv(%q) = %q, true", line, words)
		}
	})
}
