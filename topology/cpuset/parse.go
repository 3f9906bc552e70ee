package cpuset

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxID bounds the numbers a parser accepts. Linux's NR_CPUS tops out at
// 8192 (CONFIG_NR_CPUS_RANGE_END on x86_64 with MAXSMP); we allow 64 times
// that so a future kernel still parses, while a corrupt "0-4294967295" cannot
// make us allocate gigabytes.
const MaxID = 1 << 19

// ErrSyntax is wrapped by every ParseError caused by malformed text.
var ErrSyntax = errors.New("invalid syntax")

// ErrRange is wrapped by every ParseError caused by a number above MaxID or a
// range whose end is below its start.
var ErrRange = errors.New("value out of range")

// ParseError records a failed parse: which parser, the text it was given and
// why. Callers that read a file wrap it once more with the file's name.
type ParseError struct {
	Func string // "Parse" or "ParseMask"
	Text string // the input, trimmed of surrounding white space
	Err  error  // ErrSyntax or ErrRange, possibly wrapped with detail
}

// Error implements error.
func (e *ParseError) Error() string {
	return "cpuset." + e.Func + " " + strconv.Quote(e.Text) + ": " + e.Err.Error()
}

// Unwrap returns the underlying ErrSyntax or ErrRange.
func (e *ParseError) Unwrap() error { return e.Err }

// Parse reads a Linux cpulist such as "0-3,8,10-11" (the format of
// cpulist, cpus_allowed_list, cpuset.cpus and cgroup v2 cpuset.cpus.effective).
// Surrounding white space and a trailing newline are ignored and the empty
// string is the empty set. Strides ("0-7:2/4", accepted by the kernel's
// bitmap_parselist for writes) are accepted too.
func Parse(text string) (Set, error) {
	t := strings.TrimSpace(text)
	var s Set
	if t == "" {
		return s, nil
	}
	fail := func(err error) (Set, error) {
		return Set{}, &ParseError{Func: "Parse", Text: t, Err: err}
	}
	for _, part := range strings.Split(t, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return fail(fmt.Errorf("empty element: %w", ErrSyntax))
		}
		rng, stride, hasStride := strings.Cut(part, ":")
		lo, hi, isRange := strings.Cut(rng, "-")
		a, err := parseID(lo)
		if err != nil {
			return fail(err)
		}
		b := a
		if isRange {
			if b, err = parseID(hi); err != nil {
				return fail(err)
			}
			if b < a {
				return fail(fmt.Errorf("range %q ends before it starts: %w", part, ErrRange))
			}
		} else if hasStride {
			return fail(fmt.Errorf("stride without a range in %q: %w", part, ErrSyntax))
		}
		used, group := 1, 1
		if hasStride {
			u, g, ok := strings.Cut(stride, "/")
			if !ok {
				return fail(fmt.Errorf("stride %q lacks '/': %w", stride, ErrSyntax))
			}
			if used, err = parseID(u); err != nil {
				return fail(err)
			}
			if group, err = parseID(g); err != nil {
				return fail(err)
			}
			if used == 0 || group == 0 || used > group {
				return fail(fmt.Errorf("stride %q: %w", stride, ErrRange))
			}
		}
		for id := a; id <= b; id++ {
			if (id-a)%group < used {
				s.Add(id)
			}
		}
	}
	return s, nil
}

func parseID(t string) (int, error) {
	if t == "" {
		return 0, fmt.Errorf("missing number: %w", ErrSyntax)
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return 0, fmt.Errorf("bad number %q: %w", t, ErrSyntax)
		}
	}
	if len(t) > 7 {
		return 0, fmt.Errorf("number %s above %d: %w", t, MaxID, ErrRange)
	}
	n, _ := strconv.Atoi(t)
	if n > MaxID {
		return 0, fmt.Errorf("number %d above %d: %w", n, MaxID, ErrRange)
	}
	return n, nil
}

// ParseMask reads a Linux bitmask such as "00000000,0000000f" (the format of
// cpumap, cpus_allowed, cpuset.cpus in bitmask form and node masks): groups of
// up to 8 hex digits separated by commas, most significant group first.
// Leading zero groups may be arbitrarily many; bits above MaxID must be zero.
// The empty string is the empty set.
func ParseMask(text string) (Set, error) {
	t := strings.TrimSpace(text)
	var s Set
	if t == "" {
		return s, nil
	}
	fail := func(err error) (Set, error) {
		return Set{}, &ParseError{Func: "ParseMask", Text: t, Err: err}
	}
	groups := strings.Split(t, ",")
	for gi := range groups {
		g := groups[len(groups)-1-gi] // least significant first
		if g == "" || len(g) > 8 {
			return fail(fmt.Errorf("group %q is not 1-8 hex digits: %w", g, ErrSyntax))
		}
		v, err := strconv.ParseUint(g, 16, 32)
		if err != nil {
			return fail(fmt.Errorf("group %q is not hex: %w", g, ErrSyntax))
		}
		for b := 0; v != 0; b++ {
			if v&1 != 0 {
				id := gi*32 + b
				if id > MaxID {
					return fail(fmt.Errorf("bit %d above %d: %w", id, MaxID, ErrRange))
				}
				s.Add(id)
			}
			v >>= 1
		}
	}
	return s, nil
}

// Mask formats s the way ParseMask reads it: comma-separated 8-digit hex
// groups, most significant first, at least one group.
func (s Set) Mask() string {
	last := s.Last()
	n := 1
	if last >= 0 {
		n = last/32 + 1
	}
	parts := make([]string, n)
	for i := range n {
		var v uint32
		for b := range 32 {
			if s.Contains(i*32 + b) {
				v |= 1 << uint(b)
			}
		}
		parts[n-1-i] = fmt.Sprintf("%08x", v)
	}
	return strings.Join(parts, ",")
}
