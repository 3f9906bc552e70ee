package buildgraph

import (
	"errors"
	"reflect"
	"testing"
)

var splitTests = []struct {
	in   string
	want []string
	err  string // "" for success
	kind error
}{
	{"", nil, "", nil},
	{"  \t\n ", nil, "", nil},
	{"cc -c a.c", []string{"cc", "-c", "a.c"}, "", nil},
	{"  cc   -c\ta.c  ", []string{"cc", "-c", "a.c"}, "", nil},
	{`cc -DNAME="b c" -c '../b.c'`, []string{"cc", "-DNAME=b c", "-c", "../b.c"}, "", nil},
	{`a'b'"c"d`, []string{"abcd"}, "", nil},
	{`'' ""`, []string{"", ""}, "", nil},
	{`a\ b`, []string{"a b"}, "", nil},
	{`a\"b`, []string{`a"b`}, "", nil},
	{"a\\\nb", []string{"ab"}, "", nil},
	{`"a\"b\\c\d"`, []string{`a"b\c\d`}, "", nil},
	{"\"a\\\nb\"", []string{"ab"}, "", nil},
	{`'a\b'`, []string{`a\b`}, "", nil},
	{`-DX='"q"'`, []string{`-DX="q"`}, "", nil},
	{"a#b c~d", []string{"a#b", "c~d"}, "", nil},
	{`"*" '?' \[`, []string{"*", "?", "["}, "", nil},
	{"é ü", []string{"é", "ü"}, "", nil},
	{`'abc`, nil, "at byte 0: unterminated single quote", ErrSyntax},
	{`x "abc`, nil, "at byte 2: unterminated double quote", ErrSyntax},
	{`abc\`, nil, "at byte 3: trailing backslash", ErrSyntax},
	{"a | b", nil, "at byte 2: unquoted '|' needs a shell", ErrNeedsShell},
	{"a>b", nil, "at byte 1: unquoted '>' needs a shell", ErrNeedsShell},
	{"a && b", nil, "at byte 2: unquoted '&' needs a shell", ErrNeedsShell},
	{"a; b", nil, "at byte 1: unquoted ';' needs a shell", ErrNeedsShell},
	{"(a)", nil, "at byte 0: unquoted '(' needs a shell", ErrNeedsShell},
	{"echo $HOME", nil, "at byte 5: expansion '$' needs a shell", ErrNeedsShell},
	{`echo "$HOME"`, nil, "at byte 6: expansion '$' needs a shell", ErrNeedsShell},
	{"echo `date`", nil, "at byte 5: expansion '`' needs a shell", ErrNeedsShell},
	{"ls *.c", nil, "at byte 3: glob '*' needs a shell", ErrNeedsShell},
	{"ls a?", nil, "at byte 4: glob '?' needs a shell", ErrNeedsShell},
	{"ls [ab]", nil, "at byte 3: glob '[' needs a shell", ErrNeedsShell},
	{"cd ~", nil, "at byte 3: word-initial '~' needs a shell", ErrNeedsShell},
	{"a #comment", nil, "at byte 2: word-initial '#' needs a shell", ErrNeedsShell},
}

func TestSplitWords(t *testing.T) {
	for _, tt := range splitTests {
		got, err := SplitWords(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err || !errors.Is(err, tt.kind) {
				t.Errorf("SplitWords(%q) = %q, %v; want error %q (%v)", tt.in, got, err, tt.err, tt.kind)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SplitWords(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestQuoteWords(t *testing.T) {
	for _, tt := range []struct {
		words []string
		want  string
	}{
		{nil, ""},
		{[]string{"cc", "-c", "a.c", "-o", "out/a.o"}, "cc -c a.c -o out/a.o"},
		{[]string{"-DX=1", "--flag=a,b:c", "user@host", "50%"}, "-DX=1 --flag=a,b:c user@host 50%"},
		{[]string{""}, "''"},
		{[]string{"a b"}, "'a b'"},
		{[]string{"it's"}, `'it'\''s'`},
		{[]string{"$HOME", "*.c", "~"}, "'$HOME' '*.c' '~'"},
		{[]string{"é"}, "'é'"},
	} {
		got := QuoteWords(tt.words)
		if got != tt.want {
			t.Errorf("QuoteWords(%q) = %q, want %q", tt.words, got, tt.want)
		}
		back, err := SplitWords(got)
		if err != nil || !reflect.DeepEqual(back, tt.words) && !(len(back) == 0 && len(tt.words) == 0) {
			t.Errorf("SplitWords(QuoteWords(%q)) = %q, %v", tt.words, back, err)
		}
	}
}

func TestTaskCommandLine(t *testing.T) {
	if got := (&Task{Cmd: []string{"echo", "a b"}}).CommandLine(); got != "echo 'a b'" {
		t.Errorf("Cmd CommandLine = %q", got)
	}
	if got := (&Task{Shell: "echo a | wc"}).CommandLine(); got != "echo a | wc" {
		t.Errorf("Shell CommandLine = %q", got)
	}
	a := &Task{Cmd: []string{"echo", "a b"}}
	b := &Task{Cmd: []string{"echo a", "b"}}
	c := &Task{Shell: "echo a b"}
	if a.CommandHash() == b.CommandHash() || a.CommandHash() == c.CommandHash() {
		t.Error("CommandHash collides on word boundaries or Cmd/Shell")
	}
	if a.CommandHash() != (&Task{ID: "other", Cmd: []string{"echo", "a b"}}).CommandHash() {
		t.Error("CommandHash depends on the ID")
	}
}
