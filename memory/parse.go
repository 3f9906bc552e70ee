package memory

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
)

// ErrSyntax is wrapped by every parse error: the file does not have the
// kernel's format.
var ErrSyntax = errors.New("syntax error")

// FileError names the file a parse error comes from, and the text.
type FileError struct {
	Path string
	Text string
	Err  error
}

func (e *FileError) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("%s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("%s: %q: %v", e.Path, e.Text, e.Err)
}

// Unwrap returns the underlying error.
func (e *FileError) Unwrap() error { return e.Err }

// Pressure is one PSI resource file (/proc/pressure/memory, or a cgroup
// v2 memory.pressure): the share of wall time in which some task (Some)
// or every non-idle task (Full) stalled on memory, averaged over the last
// 10 s in percent, and the cumulative stall time in microseconds.
type Pressure struct {
	Some10, Full10       float64
	SomeTotal, FullTotal int64
}

// parsePressure parses a PSI file:
//
//	some avg10=0.00 avg60=0.00 avg300=0.00 total=0
//	full avg10=0.00 avg60=0.00 avg300=0.00 total=0
//
// The "full" line is absent before Linux 5.13 for the cpu resource, and
// Full stays zero then.
func parsePressure(b []byte) (Pressure, error) {
	var p Pressure
	seen := false
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		var avg *float64
		var total *int64
		switch string(f[0]) {
		case "some":
			avg, total, seen = &p.Some10, &p.SomeTotal, true
		case "full":
			avg, total = &p.Full10, &p.FullTotal
		default:
			return Pressure{}, fmt.Errorf("line %q is not some/full: %w", line, ErrSyntax)
		}
		got := 0
		for _, kv := range f[1:] {
			k, v, ok := bytes.Cut(kv, []byte{'='})
			if !ok {
				return Pressure{}, fmt.Errorf("field %q is not key=value: %w", kv, ErrSyntax)
			}
			switch string(k) {
			case "avg10":
				x, err := strconv.ParseFloat(string(v), 64)
				if err != nil || !(x >= 0) || math.IsInf(x, 0) {
					return Pressure{}, fmt.Errorf("avg10 %q: %w", v, ErrSyntax)
				}
				*avg = x
				got |= 1
			case "total":
				x, err := strconv.ParseInt(string(v), 10, 64)
				if err != nil || x < 0 {
					return Pressure{}, fmt.Errorf("total %q: %w", v, ErrSyntax)
				}
				*total = x
				got |= 2
			}
		}
		if got != 3 {
			return Pressure{}, fmt.Errorf("line %q lacks avg10 or total: %w", line, ErrSyntax)
		}
	}
	if !seen {
		return Pressure{}, fmt.Errorf("no \"some\" line: %w", ErrSyntax)
	}
	return p, nil
}

// parseKeyed returns the value of key in a file of "key value [unit]"
// lines: /proc/meminfo ("MemAvailable:  123 kB", key "MemAvailable:"),
// /proc/vmstat, memory.stat, memory.events, memory.oom_control, a node's
// meminfo ("Node 0 MemFree:  123 kB", whose first two words the caller
// skips by giving key "MemFree:" and skip 2). A value followed by "kB" is
// returned in bytes. ok is false when the key is absent.
func parseKeyed(b []byte, key string, skip int) (v int64, ok bool, err error) {
	for len(b) > 0 {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		f := bytes.Fields(line)
		if len(f) < skip+2 || string(f[skip]) != key {
			continue
		}
		n, err := strconv.ParseInt(string(f[skip+1]), 10, 64)
		if err != nil || n < 0 {
			return 0, false, fmt.Errorf("%s %q: %w", key, f[skip+1], ErrSyntax)
		}
		if len(f) > skip+2 && string(f[skip+2]) == "kB" {
			if n > math.MaxInt64>>10 {
				return 0, false, fmt.Errorf("%s %q kB is too large: %w", key, f[skip+1], ErrSyntax)
			}
			n <<= 10
		}
		return n, true, nil
	}
	return 0, false, nil
}

// parseLimit parses a cgroup limit file: a byte count, or "max" (v2: no
// limit). v1 writes "no limit" as a huge page-aligned number
// (PAGE_COUNTER_MAX pages, 9223372036854771712 with 4 KiB pages); any
// value at or above unlimitedV1 counts as none. ok is false for no limit.
func parseLimit(b []byte) (n int64, ok bool, err error) {
	s := string(bytes.TrimSpace(b))
	if s == "max" {
		return 0, false, nil
	}
	n, err = strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("limit %q is not a byte count or \"max\": %w", s, ErrSyntax)
	}
	if n >= unlimitedV1 {
		return 0, false, nil
	}
	return n, true, nil
}

// unlimitedV1: a v1 limit at or above this (an eighth of an exabyte) is
// the kernel's "no limit".
const unlimitedV1 = 1 << 60

// statmResident returns the resident memory, in bytes, that a
// /proc/PID/statm text gives (its second field, in pages).
func statmResident(b []byte) (int64, bool) {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, false
	}
	return n * int64(os.Getpagesize()), true
}
