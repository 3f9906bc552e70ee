package buildgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// jsonReader walks a JSON document, keeping the byte offset of every value
// so that errors can say file:line:col. encoding/json reports offsets only
// for syntax errors, and DisallowUnknownFields names no place at all; its
// Decoder.Token API gives offsets but costs an allocation per token, too
// slow for graphs of thousands of tasks.
//
// So the document is first checked with json.Valid (one fast pass, and the
// syntax error, if any, is reported with its position before any complaint
// about content), and then walked here by a scanner that may trust the
// syntax: it only finds where values start and end. Strings with escapes
// are decoded by encoding/json. The scanner still checks every index, so a
// bug here gives an error, never a panic.
type jsonReader struct {
	doc *jsonDoc
	i   int // offset of the next byte to read
}

// jsonDoc is the whole input file.
type jsonDoc struct {
	name  string
	data  []byte
	lines []int // offsets at which lines start; built on first use
}

// jsonField is one member of an object, with positions.
type jsonField struct {
	key    string
	keyOff int
	val    []byte // the raw value
	valOff int
}

func newJSONReader(name string, data []byte) *jsonReader {
	return &jsonReader{doc: &jsonDoc{name: name, data: data}}
}

// at returns a reader positioned at document offset off (a value found by
// an earlier walk).
func (r *jsonReader) at(off int) *jsonReader { return &jsonReader{doc: r.doc, i: off} }

// checkSyntax reports the first syntax error of the document. json.Valid is
// one fast pass; only on failure does json.Unmarshal run, for its error,
// whose Offset counts from the start of data ("after reading Offset bytes":
// the bad byte is the one before).
//
// It also rejects invalid UTF-8, which json.Valid lets through inside
// strings and encoding/json would silently turn into U+FFFD: a task id or
// path changed behind the user's back.
func (r *jsonReader) checkSyntax() error {
	data := r.doc.data
	if json.Valid(data) {
		if off := invalidUTF8(data); off >= 0 {
			return r.errorf(off, "", ErrSyntax, "invalid UTF-8 (byte 0x%02x); the file must be UTF-8 text", data[off])
		}
		return nil
	}
	var v json.RawMessage
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return r.errorf(0, "", ErrSyntax, "invalid JSON")
	}
	if se.Offset >= int64(len(data)) && strings.Contains(se.Error(), "end of JSON input") {
		return r.errorf(len(data), "", ErrSyntax, "invalid JSON: unexpected end of input")
	}
	off := max(int(se.Offset)-1, 0)
	for off < len(data) && isBlank(data[off]) {
		off++
	}
	return r.errorf(off, "", ErrSyntax, "invalid JSON: %s", strings.TrimPrefix(se.Error(), "json: "))
}

// invalidUTF8 returns the offset of the first byte of data that is not
// part of valid UTF-8, or -1.
func invalidUTF8(data []byte) int {
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// pos converts a document offset into a Pos.
func (d *jsonDoc) pos(off int) Pos {
	if d.lines == nil {
		d.lines = make([]int, 1, 1+bytes.Count(d.data, []byte{'\n'}))
		for i, c := range d.data {
			if c == '\n' {
				d.lines = append(d.lines, i+1)
			}
		}
	}
	off = max(0, min(off, len(d.data)))
	// The last line starting at or before off.
	i := sort.Search(len(d.lines), func(i int) bool { return d.lines[i] > off }) - 1
	return Pos{File: d.name, Line: i + 1, Col: off - d.lines[i] + 1}
}

// errorf builds an *Error at document offset off.
func (r *jsonReader) errorf(off int, task string, kind error, format string, args ...any) *Error {
	return &Error{Pos: r.doc.pos(off), Task: task, Msg: fmt.Sprintf(format, args...), Err: kind}
}

// broken reports input the scanner cannot follow. checkSyntax makes this
// unreachable; it exists so that a bug here is an error, not a panic.
func (r *jsonReader) broken() error {
	return r.errorf(r.i, "", ErrSyntax, "invalid JSON")
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// peek skips blanks and returns the next byte, or 0 at the end.
func (r *jsonReader) peek() byte {
	d := r.doc.data
	for r.i < len(d) && isBlank(d[r.i]) {
		r.i++
	}
	if r.i < len(d) {
		return d[r.i]
	}
	return 0
}

// nextOff skips blanks and returns the offset of the next value.
func (r *jsonReader) nextOff() int {
	r.peek()
	return r.i
}

// skipValue moves past the value at the reader's position and returns it.
func (r *jsonReader) skipValue() ([]byte, error) {
	d := r.doc.data
	start := r.nextOff()
	switch r.peek() {
	case '"':
		if err := r.skipString(); err != nil {
			return nil, err
		}
		return d[start:r.i], nil
	case '{', '[':
		depth := 0
		for r.i < len(d) {
			switch d[r.i] {
			case '"':
				if err := r.skipString(); err != nil {
					return nil, err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					r.i++
					return d[start:r.i], nil
				}
			}
			r.i++
		}
		return nil, r.broken()
	case 0:
		return nil, r.broken()
	}
	// A number or a literal: up to the next separator.
	for r.i < len(d) && !strings.ContainsRune(",}]: \t\n\r", rune(d[r.i])) {
		r.i++
	}
	return d[start:r.i], nil
}

// skipString moves past the string that starts at the reader's position.
func (r *jsonReader) skipString() error {
	d := r.doc.data
	for i := r.i + 1; i < len(d); i++ {
		switch d[i] {
		case '\\':
			i++
		case '"':
			r.i = i + 1
			return nil
		}
	}
	return r.broken()
}

// readString reads a string value.
func (r *jsonReader) readString() (string, error) {
	raw, err := r.skipValue()
	if err != nil {
		return "", err
	}
	return decodeString(raw)
}

// decodeString decodes a raw JSON string; most have no escapes.
func decodeString(raw []byte) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		// No backslash: no escapes, and (the string being well-formed) no
		// quote inside either. Invalid UTF-8 goes the slow way, which
		// replaces it with U+FFFD as encoding/json always does; the
		// loaders never get there, checkSyntax having rejected it.
		if inner := raw[1 : len(raw)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
			return string(inner), nil
		}
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// delim moves past the delimiter want ('{' or '['). what names the value
// for the error ("the build graph", `field "tasks"`).
func (r *jsonReader) delim(want byte, what string) (int, error) {
	off := r.nextOff()
	if r.peek() == want {
		r.i++
		return off, nil
	}
	kind := "an object"
	if want == '[' {
		kind = "an array"
	}
	return off, r.errorf(off, "", ErrField, "%s: want %s, got %s", what, kind, rawKind(r.doc.data[off:]))
}

// members walks an object, calling fn for each member after reading its
// key; fn must consume the value (value, skipValue, or a nested walk).
func (r *jsonReader) members(what string, fn func(key string, keyOff int) error) (start int, err error) {
	if start, err = r.delim('{', what); err != nil {
		return start, err
	}
	if r.peek() == '}' {
		r.i++
		return start, nil
	}
	for {
		keyOff := r.nextOff()
		if r.peek() != '"' {
			return start, r.broken()
		}
		key, err := r.readString()
		if err != nil {
			return start, r.broken()
		}
		if r.peek() != ':' {
			return start, r.broken()
		}
		r.i++
		if err := fn(key, keyOff); err != nil {
			return start, err
		}
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return start, nil
		default:
			return start, r.broken()
		}
	}
}

// value reads the raw value of the member whose key was just read.
func (r *jsonReader) value(key string, keyOff int) (jsonField, error) {
	valOff := r.nextOff()
	val, err := r.skipValue()
	return jsonField{key: key, keyOff: keyOff, val: val, valOff: valOff}, err
}

// object reads a whole object into its fields, rejecting repeated keys.
// what names the object in errors.
func (r *jsonReader) object(what string) (start int, fields []jsonField, err error) {
	var seen map[string]bool // only for big objects (an env); small ones scan
	start, err = r.members(what, func(key string, keyOff int) error {
		dup := false
		if seen != nil {
			dup = seen[key]
		} else {
			for _, f := range fields {
				dup = dup || f.key == key
			}
			if len(fields) >= 16 {
				seen = make(map[string]bool, 2*len(fields))
				for _, f := range fields {
					seen[f.key] = true
				}
			}
		}
		if dup {
			return r.errorf(keyOff, "", ErrField, "%s: field %q appears twice", what, key)
		}
		if seen != nil {
			seen[key] = true
		}
		f, err := r.value(key, keyOff)
		fields = append(fields, f)
		return err
	})
	return start, fields, err
}

// array calls fn for each element of an array; fn must consume exactly one
// value.
func (r *jsonReader) array(what string, fn func(i int, off int) error) error {
	if _, err := r.delim('[', what); err != nil {
		return err
	}
	if r.peek() == ']' {
		r.i++
		return nil
	}
	for i := 0; ; i++ {
		if err := fn(i, r.nextOff()); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return nil
		default:
			return r.broken()
		}
	}
}

// end checks that nothing but blanks follows the top-level value.
func (r *jsonReader) end() error {
	if r.peek() != 0 || r.i != len(r.doc.data) {
		return r.errorf(r.i, "", ErrSyntax, "invalid JSON: unexpected data after the top-level value")
	}
	return nil
}

// rawKind names the JSON type of the value that starts v.
func rawKind(v []byte) string {
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// isNull reports whether a raw value is the literal null.
func isNull(v []byte) bool { return string(v) == "null" }
