package cpuset_test

import (
	"errors"
	"testing"

	"github.com/numasteal/numasteal/topology/cpuset"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want string // the set as a cpulist
		err  string
		is   error
	}{
		{"", "", "", nil},
		{"\n", "", "", nil},
		{"0", "0", "", nil},
		{"0-3,8-11\n", "0-3,8-11", "", nil},
		{"8-11,0-3", "0-3,8-11", "", nil},
		{"1,3,5,7", "1,3,5,7", "", nil},
		{"0 , 2", "0,2", "", nil},
		{"0-7:2/4", "0-1,4-5", "", nil},
		{"0-9:1/3", "0,3,6,9", "", nil},
		{"0000001", "1", "", nil},
		{"524288", "524288", "", nil},
		{",", "", `cpuset.Parse ",": empty element: invalid syntax`, cpuset.ErrSyntax},
		{"1,,2", "", `cpuset.Parse "1,,2": empty element: invalid syntax`, cpuset.ErrSyntax},
		{"0-", "", `cpuset.Parse "0-": missing number: invalid syntax`, cpuset.ErrSyntax},
		{"-1", "", `cpuset.Parse "-1": missing number: invalid syntax`, cpuset.ErrSyntax},
		{"0x1", "", `cpuset.Parse "0x1": bad number "0x1": invalid syntax`, cpuset.ErrSyntax},
		{"1-0", "", `cpuset.Parse "1-0": range "1-0" ends before it starts: value out of range`, cpuset.ErrRange},
		{"3:1/2", "", `cpuset.Parse "3:1/2": stride without a range in "3:1/2": invalid syntax`, cpuset.ErrSyntax},
		{"0-3:1", "", `cpuset.Parse "0-3:1": stride "1" lacks '/': invalid syntax`, cpuset.ErrSyntax},
		{"0-3:0/4", "", `cpuset.Parse "0-3:0/4": stride "0/4": value out of range`, cpuset.ErrRange},
		{"0-3:5/4", "", `cpuset.Parse "0-3:5/4": stride "5/4": value out of range`, cpuset.ErrRange},
		{"524289", "", `cpuset.Parse "524289": number 524289 above 524288: value out of range`, cpuset.ErrRange},
		{"0-4294967295", "", `cpuset.Parse "0-4294967295": number 4294967295 above 524288: value out of range`, cpuset.ErrRange},
	}
	for _, tt := range tests {
		got, err := cpuset.Parse(tt.in)
		if got.String() != tt.want || errString(err) != tt.err || (tt.is != nil && !errors.Is(err, tt.is)) {
			t.Errorf("Parse(%q) = %q, %v; want %q, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestParseMask(t *testing.T) {
	tests := []struct {
		in   string
		want string
		err  string
		is   error
	}{
		{"", "", "", nil},
		{"0", "", "", nil},
		{"00000001", "0", "", nil},
		{"00000000,0000000f\n", "0-3", "", nil},
		{"ff,00000000", "32-39", "", nil},
		{"0000,00000000,00000000,00ffffff,ffffffff,ffffffff", "0-87", "", nil},
		{"00155550", "4,6,8,10,12,14,16,18,20", "", nil},
		{"DEADBEEF", "0-3,5-7,9-13,15-16,18-19,21,23,25-28,30-31", "", nil},
		{",", "", `cpuset.ParseMask ",": group "" is not 1-8 hex digits: invalid syntax`, cpuset.ErrSyntax},
		{"1,", "", `cpuset.ParseMask "1,": group "" is not 1-8 hex digits: invalid syntax`, cpuset.ErrSyntax},
		{"fffffffff", "", `cpuset.ParseMask "fffffffff": group "fffffffff" is not 1-8 hex digits: invalid syntax`, cpuset.ErrSyntax},
		{"0x1f", "", `cpuset.ParseMask "0x1f": group "0x1f" is not hex: invalid syntax`, cpuset.ErrSyntax},
		{"1 ,2", "", `cpuset.ParseMask "1 ,2": group "1 " is not hex: invalid syntax`, cpuset.ErrSyntax},
		{"g", "", `cpuset.ParseMask "g": group "g" is not hex: invalid syntax`, cpuset.ErrSyntax},
	}
	for _, tt := range tests {
		got, err := cpuset.ParseMask(tt.in)
		if got.String() != tt.want || errString(err) != tt.err || (tt.is != nil && !errors.Is(err, tt.is)) {
			t.Errorf("ParseMask(%q) = %q, %v; want %q, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestParseMaskAboveMaxID(t *testing.T) {
	// Bit MaxID+1 set: group 16384 holds ids 524288-524319, bit 1 is 524289.
	in := "00000002"
	for i := 0; i < 16384; i++ {
		in += ",00000000"
	}
	_, err := cpuset.ParseMask(in)
	if !errors.Is(err, cpuset.ErrRange) {
		t.Errorf("ParseMask(bit %d) error = %v, want ErrRange", cpuset.MaxID+1, err)
	}
	// Bit MaxID itself is fine.
	in = "00000001" + in[8:]
	s, err := cpuset.ParseMask(in)
	if err != nil || s.String() != "524288" {
		t.Errorf("ParseMask(bit MaxID) = %s, %v", s, err)
	}
}

func TestMaskString(t *testing.T) {
	for _, tt := range []struct {
		set        cpuset.Set
		list, mask string
	}{
		{cpuset.Set{}, "", "00000000"},
		{cpuset.Of(0), "0", "00000001"},
		{cpuset.Range(0, 3), "0-3", "0000000f"},
		{cpuset.Of(32, 33, 35), "32-33,35", "0000000b,00000000"},
		{cpuset.Of(0, 63, 64), "0,63-64", "00000001,80000000,00000001"},
	} {
		if got := tt.set.String(); got != tt.list {
			t.Errorf("String() = %q, want %q", got, tt.list)
		}
		if got := tt.set.Mask(); got != tt.mask {
			t.Errorf("Mask() = %q, want %q", got, tt.mask)
		}
	}
}

func TestParseErrorUnwrap(t *testing.T) {
	_, err := cpuset.Parse("x")
	var pe *cpuset.ParseError
	if !errors.As(err, &pe) || pe.Func != "Parse" || pe.Text != "x" || !errors.Is(pe, cpuset.ErrSyntax) {
		t.Errorf("Parse(x) error = %#v", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
