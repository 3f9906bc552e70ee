package cpuset_test

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	"github.com/numasteal/numasteal/topology/cpuset"
)

// This file holds slow, obviously-correct reference parsers that the fuzz
// targets compare Parse and ParseMask against (the netip slow_test.go
// idea). They are written differently on purpose: a regular expression per
// cpulist element, a nibble-by-nibble walk for masks.

var errRef = errors.New("reference parser rejects the input")

// listElement is one cpulist element: N, N-M or N-M:used/group.
var listElement = regexp.MustCompile(`^([0-9]+)(?:-([0-9]+)(?::([0-9]+)/([0-9]+))?)?$`)

// refNumber parses a decimal id as Parse defines it: at most 7 digits
// (leading zeros count) and no more than cpuset.MaxID.
func refNumber(s string) (int, bool) {
	if len(s) > 7 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n <= cpuset.MaxID
}

// slowParse is the reference for cpuset.Parse.
func slowParse(text string) (cpuset.Set, error) {
	var s cpuset.Set
	t := strings.TrimSpace(text)
	if t == "" {
		return s, nil
	}
	for _, part := range strings.Split(t, ",") {
		m := listElement.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			return cpuset.Set{}, errRef
		}
		lo, ok := refNumber(m[1])
		if !ok {
			return cpuset.Set{}, errRef
		}
		hi, used, group := lo, 1, 1
		if m[2] != "" {
			if hi, ok = refNumber(m[2]); !ok || hi < lo {
				return cpuset.Set{}, errRef
			}
		}
		if m[3] != "" {
			u, ok1 := refNumber(m[3])
			g, ok2 := refNumber(m[4])
			if !ok1 || !ok2 || u == 0 || g == 0 || u > g {
				return cpuset.Set{}, errRef
			}
			used, group = u, g
		}
		// Walk the range in blocks of group, taking the first used of each.
		for start := lo; start <= hi; start += group {
			for id := start; id < start+used && id <= hi; id++ {
				s.Add(id)
			}
		}
	}
	return s, nil
}

// slowParseMask is the reference for cpuset.ParseMask.
func slowParseMask(text string) (cpuset.Set, error) {
	var s cpuset.Set
	t := strings.TrimSpace(text)
	if t == "" {
		return s, nil
	}
	groups := strings.Split(t, ",")
	for gi := 0; gi < len(groups); gi++ {
		g := groups[len(groups)-1-gi]
		if len(g) == 0 || len(g) > 8 {
			return cpuset.Set{}, errRef
		}
		for k := 0; k < len(g); k++ { // k-th hex digit from the right
			c := g[len(g)-1-k]
			var nib int
			switch {
			case '0' <= c && c <= '9':
				nib = int(c - '0')
			case 'a' <= c && c <= 'f':
				nib = int(c-'a') + 10
			case 'A' <= c && c <= 'F':
				nib = int(c-'A') + 10
			default:
				return cpuset.Set{}, errRef
			}
			for bit := 0; bit < 4; bit++ {
				if nib&(1<<bit) == 0 {
					continue
				}
				id := gi*32 + k*4 + bit
				if id > cpuset.MaxID {
					return cpuset.Set{}, errRef
				}
				s.Add(id)
			}
		}
	}
	return s, nil
}
