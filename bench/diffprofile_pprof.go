package bench

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// A reader of just enough of the pprof format (profile.proto, gzipped) to
// count a CPU profile's samples by leaf function: sample (2), location (4),
// function (5) and string_table (6). It avoids a dependency for ~100 lines.

// ProfileFlat is a CPU profile reduced to samples per leaf function (flat
// samples; the innermost inlined frame counts).
type ProfileFlat struct {
	Samples map[string]int64
	Total   int64
}

// ParsePprof reads a pprof profile (gzipped or not); name is the file, for
// errors. It counts the first sample value (samples, for a CPU profile).
func ParsePprof(name string, data []byte) (*ProfileFlat, error) {
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("bench: profile %s: %w", name, err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("bench: profile %s: %w", name, err)
		}
	}
	type sample struct {
		leaf  uint64
		value int64
	}
	var (
		samples   []sample
		locFunc   = map[uint64]uint64{} // location id → leaf function id
		funcName  = map[uint64]int64{}  // function id → string index
		strings   []string
		errFormat = func(what string) error {
			return fmt.Errorf("bench: profile %s: malformed %s: %w", name, what, errBadProto)
		}
	)
	err := protoFields(data, func(field int, wire int, v uint64, b []byte) error {
		switch field {
		case 2: // Sample
			var s sample
			first, firstVal := true, true
			err := protoFields(b, func(f, w int, v uint64, bb []byte) error {
				switch f {
				case 1:
					return protoUints(w, v, bb, func(x uint64) {
						if first {
							s.leaf, first = x, false
						}
					})
				case 2:
					return protoUints(w, v, bb, func(x uint64) {
						if firstVal {
							s.value, firstVal = int64(x), false
						}
					})
				}
				return nil
			})
			if err != nil {
				return errFormat("sample")
			}
			samples = append(samples, s)
		case 4: // Location
			var id, fn uint64
			gotLine := false
			err := protoFields(b, func(f, w int, v uint64, bb []byte) error {
				switch {
				case f == 1 && w == 0:
					id = v
				case f == 4 && w == 2 && !gotLine:
					gotLine = true
					return protoFields(bb, func(f, w int, v uint64, _ []byte) error {
						if f == 1 && w == 0 {
							fn = v
						}
						return nil
					})
				}
				return nil
			})
			if err != nil {
				return errFormat("location")
			}
			locFunc[id] = fn
		case 5: // Function
			var id uint64
			var nm int64
			err := protoFields(b, func(f, w int, v uint64, _ []byte) error {
				switch {
				case f == 1 && w == 0:
					id = v
				case f == 2 && w == 0:
					nm = int64(v)
				}
				return nil
			})
			if err != nil {
				return errFormat("function")
			}
			funcName[id] = nm
		case 6:
			strings = append(strings, string(b))
		}
		return nil
	})
	if err != nil {
		if err == errBadProto { // raw, from the top level
			return nil, errFormat("profile")
		}
		return nil, err
	}
	p := &ProfileFlat{Samples: map[string]int64{}}
	for _, s := range samples {
		name := "[unknown]"
		if fn, ok := locFunc[s.leaf]; ok {
			if si, ok := funcName[fn]; ok && si >= 0 && si < int64(len(strings)) {
				name = strings[si]
			}
		}
		p.Samples[name] += s.value
		p.Total += s.value
	}
	return p, nil
}

var errBadProto = errors.New("bad protobuf encoding")

// protoFields calls f for each field of the protobuf message data: its
// number, wire type, value (varint, fixed) or bytes (length-delimited).
func protoFields(data []byte, f func(field, wire int, v uint64, b []byte) error) error {
	for len(data) > 0 {
		key, n := protoVarint(data)
		if n <= 0 {
			return errBadProto
		}
		data = data[n:]
		field, wire := int(key>>3), int(key&7)
		var v uint64
		var b []byte
		switch wire {
		case 0:
			if v, n = protoVarint(data); n <= 0 {
				return errBadProto
			}
			data = data[n:]
		case 1:
			if len(data) < 8 {
				return errBadProto
			}
			data = data[8:]
		case 2:
			l, n := protoVarint(data)
			if n <= 0 || uint64(len(data)-n) < l {
				return errBadProto
			}
			b, data = data[n:n+int(l)], data[n+int(l):]
		case 5:
			if len(data) < 4 {
				return errBadProto
			}
			data = data[4:]
		default:
			return errBadProto
		}
		if err := f(field, wire, v, b); err != nil {
			return err
		}
	}
	return nil
}

// protoUints calls f with a repeated integer field's values, packed (wire
// 2) or not (wire 0).
func protoUints(wire int, v uint64, b []byte, f func(uint64)) error {
	if wire == 0 {
		f(v)
		return nil
	}
	if wire != 2 {
		return errBadProto
	}
	for len(b) > 0 {
		x, n := protoVarint(b)
		if n <= 0 {
			return errBadProto
		}
		f(x)
		b = b[n:]
	}
	return nil
}

// protoVarint decodes a varint, returning its length (0 when truncated or
// too long).
func protoVarint(b []byte) (uint64, int) {
	var x uint64
	for i := 0; i < len(b) && i < 10; i++ {
		x |= uint64(b[i]&0x7f) << (7 * i)
		if b[i] < 0x80 {
			return x, i + 1
		}
	}
	return 0, 0
}
