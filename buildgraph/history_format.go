package buildgraph

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// The history file's lines, written and read without reflection.
//
// appendHistEntry writes exactly one form of entry line, and parseHistEntry
// reads exactly that form (keys in that order, no spaces, strings without
// escapes); a line in any other form, written by hand or by version 1's
// encoding/json, goes to encoding/json in ReadHistory, which also words the
// errors. encoding/json costs about 6 µs a line; this path a small part of
// that (BenchmarkLoadHistory).

// parseHistoryHeader returns the run count of a header line: 0 for
// version 1.
func parseHistoryHeader(line []byte) (runs int64, ok bool) {
	if string(line) == historyHeaderV1 {
		return 0, true
	}
	rest, ok := bytes.CutPrefix(line, []byte(historyHeaderV2))
	if !ok {
		return 0, false
	}
	num, ok := bytes.CutSuffix(rest, []byte("}"))
	if !ok {
		return 0, false
	}
	runs, ok = parseDecimal(num)
	return runs, ok
}

// appendHistEntry appends e's line, newline included:
// {"id":"a.o","hash":"…","ms":[1,2],"mb":5,"seen":3} (no "mb" or "seen"
// when 0).
func appendHistEntry(b []byte, e *histEntry) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, e.ID)
	b = append(b, `,"hash":`...)
	b = appendJSONString(b, e.Hash)
	b = append(b, `,"ms":[`...)
	for k, ms := range e.MS {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, ms, 10)
	}
	b = append(b, ']')
	if e.MB != 0 {
		b = append(b, `,"mb":`...)
		b = strconv.AppendInt(b, e.MB, 10)
	}
	if e.Seen != 0 {
		b = append(b, `,"seen":`...)
		b = strconv.AppendInt(b, e.Seen, 10)
	}
	return append(b, "}\n"...)
}

// appendJSONString appends s as a JSON string, as encoding/json would
// without HTML escaping.
func appendJSONString(b []byte, s string) []byte {
	if plainJSON(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

// plainJSON reports whether s stands in a JSON string as it is: printable
// ASCII without '"' or '\'.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// parseHistEntry parses a line in appendHistEntry's form into e, and
// reports false for any other line (e is then to be discarded).
func parseHistEntry(line []byte, e *histEntry) bool {
	p := histParser{b: line}
	if !p.lit(`{"id":`) {
		return false
	}
	id, ok := p.str()
	if !ok || !p.lit(`,"hash":`) {
		return false
	}
	hash, ok := p.str()
	if !ok || !p.lit(`,"ms":[`) {
		return false
	}
	var ms [HistoryRuns]int64
	n := 0
	for {
		v, ok := p.int()
		if !ok || n == len(ms) {
			return false
		}
		ms[n] = v
		n++
		if p.lit("]") {
			break
		}
		if !p.lit(",") {
			return false
		}
	}
	if p.lit(`,"mb":`) {
		if e.MB, ok = p.int(); !ok {
			return false
		}
	}
	if p.lit(`,"seen":`) {
		if e.Seen, ok = p.int(); !ok {
			return false
		}
	}
	if !p.lit("}") || len(p.b) != 0 {
		return false
	}
	e.ID, e.Hash, e.MS = id, hash, append([]int64(nil), ms[:n]...)
	return true
}

// histParser consumes a line from the front.
type histParser struct{ b []byte }

func (p *histParser) lit(s string) bool {
	if rest, ok := bytes.CutPrefix(p.b, []byte(s)); ok {
		p.b = rest
		return true
	}
	return false
}

// str reads a string without escapes or bytes outside printable ASCII.
func (p *histParser) str() (string, bool) {
	if len(p.b) == 0 || p.b[0] != '"' {
		return "", false
	}
	for i := 1; i < len(p.b); i++ {
		switch c := p.b[i]; {
		case c == '"':
			s := string(p.b[1:i])
			p.b = p.b[i+1:]
			return s, true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return "", false
		}
	}
	return "", false
}

// int reads a non-negative decimal of at most 18 digits (no sign, no
// leading zero but "0" itself).
func (p *histParser) int() (int64, bool) {
	i := 0
	for i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9' {
		i++
	}
	v, ok := parseDecimal(p.b[:i])
	if ok {
		p.b = p.b[i:]
	}
	return v, ok
}

// parseDecimal parses digits as JSON writes a non-negative integer: 1 to
// 18 digits, no leading zero but "0" itself.
func parseDecimal(d []byte) (int64, bool) {
	if len(d) == 0 || len(d) > 18 || (d[0] == '0' && len(d) > 1) {
		return 0, false
	}
	var v int64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}
