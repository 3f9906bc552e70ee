package cpuset_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// parseSeeds are cpulists from real sysfs files and the edge cases that
// broke or nearly broke parsers: empty elements, reversed and huge ranges,
// strides, white space, numbers at and past MaxID.
var parseSeeds = []string{
	"", "0", "0-3", "0-3,8-11", "0-15,88-103", "1,3,5,7", "0-7:2/4", "0-63:1/8",
	" 0-1 \n", "0 , 2", "0-3\n\x00", ",", "1,,2", "0-", "-1", "1-0", "0-3:0/4",
	"0-3:5/4", "3:1/2", "0-3:1", "524288", "524289", "0-524288", "0000001",
	"00000001", "0x1", "1-2-3", "\u00a01", "٣",
}

// maskSeeds are bitmasks as cpumap, cpus_allowed and thread_siblings
// write them, and malformed ones.
var maskSeeds = []string{
	"", "0", "00000001", "00000000,0000000f", "ff,00000000", "0000,00000000,00ffffff,ffffffff",
	"00155550", "3\n", ",", "1,", ",1", "fffffffff", "0x1f", "deadbeef,1", "DEADBEEF",
	"g", "1 ,2", "1,00000000,00000000,00000000",
}

// The masks at MaxID are 147 kB long; they are in TestParseMaskAboveMaxID
// rather than here, where every mutation of them would cost milliseconds.

func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, err := cpuset.Parse(text)
		want, refErr := slowParse(text)
		checkAgainstReference(t, "Parse", text, got, err, want, refErr)
	})
}

func FuzzParseMask(f *testing.F) {
	for _, s := range maskSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, err := cpuset.ParseMask(text)
		want, refErr := slowParseMask(text)
		checkAgainstReference(t, "ParseMask", text, got, err, want, refErr)
	})
}

// checkAgainstReference checks that a parser and its reference agree on
// acceptance and on the set, that errors are well-formed ParseErrors, and
// that a parsed set survives String/Parse and Mask/ParseMask round trips.
func checkAgainstReference(t *testing.T, fn, text string, got cpuset.Set, err error, want cpuset.Set, refErr error) {
	t.Helper()
	if (err == nil) != (refErr == nil) {
		t.Fatalf("%s(%q) error = %v, reference error = %v", fn, text, err, refErr)
	}
	if err != nil {
		var pe *cpuset.ParseError
		if !errors.As(err, &pe) || pe.Func != fn || pe.Text != strings.TrimSpace(text) {
			t.Fatalf("%s(%q) error %#v is not a ParseError naming %s and the trimmed text", fn, text, err, fn)
		}
		if !errors.Is(err, cpuset.ErrSyntax) && !errors.Is(err, cpuset.ErrRange) {
			t.Fatalf("%s(%q) error %v wraps neither ErrSyntax nor ErrRange", fn, text, err)
		}
		if !got.IsEmpty() {
			t.Fatalf("%s(%q) returned %s with an error", fn, text, got)
		}
		return
	}
	if !got.Equal(want) {
		t.Fatalf("%s(%q) = %s, reference %s", fn, text, got, want)
	}
	list := got.String()
	if back, err := cpuset.Parse(list); err != nil || !back.Equal(got) || back.String() != list {
		t.Fatalf("Parse(String() = %q) = %s, %v; want %s", list, back, err, got)
	}
	mask := got.Mask()
	if back, err := cpuset.ParseMask(mask); err != nil || !back.Equal(got) || back.Mask() != mask {
		t.Fatalf("ParseMask(Mask() = %q) = %s, %v; want %s", mask, back, err, got)
	}
}
