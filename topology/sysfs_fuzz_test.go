package topology

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func FuzzParseDistanceRow(f *testing.F) {
	for _, s := range []string{"10 20 20 20\n", "10", "", "10 x", "10 -1", "10\t21", "10 65537", "1e2", "+10 20", "10  20\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		row, err := parseDistanceRow(text)
		fields := strings.Fields(text)
		if err != nil {
			if row != nil || !(errors.Is(err, ErrSyntax) || errors.Is(err, ErrRange) || errors.Is(err, ErrMissing)) {
				t.Fatalf("parseDistanceRow(%q) = %v, %v", text, row, err)
			}
			return
		}
		if len(row) != len(fields) {
			t.Fatalf("parseDistanceRow(%q) has %d values for %d fields", text, len(row), len(fields))
		}
		for i, v := range row {
			if n, err := strconv.Atoi(fields[i]); err != nil || n != v || v < 0 || v > maxDistance {
				t.Fatalf("parseDistanceRow(%q)[%d] = %d, field %q", text, i, v, fields[i])
			}
		}
	})
}

func FuzzParseMemTotal(f *testing.F) {
	for _, s := range []string{
		"MemTotal:       16384 kB\n", "Node 0 MemTotal: 1 kB\nNode 0 MemFree: 0 kB\n", "MemFree: 1 kB\n",
		"Node 1 MemTotal: lots kB\n", "MemTotal: 9223372036854775807 kB\n", "MemTotal: 5 MB", "MemTotal:",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, line, err := parseMemTotal(data)
		if err != nil {
			if n != 0 || !(errors.Is(err, ErrSyntax) || errors.Is(err, ErrRange) || errors.Is(err, ErrMissing)) {
				t.Fatalf("parseMemTotal(%q) = %d, %v", data, n, err)
			}
			if !errors.Is(err, ErrMissing) && !strings.Contains(line, "MemTotal:") {
				t.Fatalf("parseMemTotal(%q) error line %q lacks MemTotal", data, line)
			}
			return
		}
		if n < 0 || n%1024 != 0 {
			t.Fatalf("parseMemTotal(%q) = %d, want a non-negative number of KiB", data, n)
		}
	})
}

func FuzzParseCacheSize(f *testing.F) {
	for _, s := range []string{"32K", "1024K\n", "8M", "1G", "48KiB", "0K", "", "K", "32", "32Q", "99999999999999999999K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		n, err := parseCacheSize(text)
		if err != nil {
			if n != 0 || !(errors.Is(err, ErrSyntax) || errors.Is(err, ErrRange)) {
				t.Fatalf("parseCacheSize(%q) = %d, %v", text, n, err)
			}
			return
		}
		if n < 0 || n%1024 != 0 {
			t.Fatalf("parseCacheSize(%q) = %d", text, n)
		}
	})
}
