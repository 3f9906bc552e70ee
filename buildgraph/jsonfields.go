package buildgraph

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// fieldReader decodes the members of one object (a task, a compilation
// database entry), naming it in every error: `task "a": field "cpus": ...`.
type fieldReader struct {
	r    *jsonReader
	who  string // `task "a"`, or `tasks[3]` while the ID is unknown
	task string // the task's ID when known
}

func (fr fieldReader) errorf(off int, format string, args ...any) *Error {
	return fr.r.errorf(off, fr.task, ErrField, "%s: %s", fr.who, fmt.Sprintf(format, args...))
}

func (fr fieldReader) wrongType(f jsonField, want string) *Error {
	return fr.errorf(f.valOff, "field %q: want %s, got %s", f.key, want, rawKind(f.val))
}

// str decodes a string field.
func (fr fieldReader) str(f jsonField) (string, error) {
	if rawKind(f.val) != "a string" {
		return "", fr.wrongType(f, "a string")
	}
	s, err := decodeString(f.val)
	if err != nil {
		return "", fr.errorf(f.valOff, "field %q: %v", f.key, err)
	}
	return s, nil
}

// strs decodes an array of strings, naming a bad element by its own place.
func (fr fieldReader) strs(f jsonField) ([]string, error) {
	if rawKind(f.val) != "an array" {
		return nil, fr.wrongType(f, "an array of strings")
	}
	out := []string{}
	sub := fr.r.at(f.valOff)
	err := sub.array("field "+f.key, func(i int, off int) error {
		if sub.peek() != '"' {
			return fr.errorf(off, "field %q: element %d is %s, want a string", f.key, i, rawKind(sub.doc.data[off:]))
		}
		s, err := sub.readString()
		if err != nil {
			return fr.errorf(off, "field %q: element %d: %v", f.key, i, err)
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// integer decodes a whole number no smaller than lo.
func (fr fieldReader) integer(f jsonField, lo int) (int, error) {
	if rawKind(f.val) != "a number" {
		return 0, fr.wrongType(f, "a whole number")
	}
	n, err := json.Number(f.val).Int64()
	if err != nil || n > math.MaxInt32 {
		return 0, fr.errorf(f.valOff, "field %q: want a whole number, got %s", f.key, f.val)
	}
	if n < int64(lo) {
		return 0, fr.errorf(f.valOff, "field %q: must be at least %d, got %d", f.key, lo, n)
	}
	return int(n), nil
}

// boolean decodes true or false.
func (fr fieldReader) boolean(f jsonField) (bool, error) {
	if rawKind(f.val) != "a boolean" {
		return false, fr.wrongType(f, "true or false")
	}
	return string(f.val) == "true", nil
}

// env decodes an object of string values into environment variables.
func (fr fieldReader) env(f jsonField) (map[string]string, error) {
	if rawKind(f.val) != "an object" {
		return nil, fr.wrongType(f, "an object of strings")
	}
	sub := fr.r.at(f.valOff)
	_, members, err := sub.object(fr.who + `: field "env"`)
	if err != nil {
		return nil, err
	}
	env := make(map[string]string, len(members))
	for _, m := range members {
		if m.key == "" || strings.ContainsAny(m.key, "=\x00") {
			return nil, fr.errorf(m.keyOff, "field \"env\": variable name %q is empty or holds '=' or NUL", m.key)
		}
		if rawKind(m.val) != "a string" {
			return nil, fr.errorf(m.valOff, "field \"env\": %q: want a string, got %s", m.key, rawKind(m.val))
		}
		v, err := decodeString(m.val)
		if err != nil {
			return nil, fr.errorf(m.valOff, "field \"env\": %q: %v", m.key, err)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, fr.errorf(m.valOff, "field \"env\": %q: value holds a NUL byte", m.key)
		}
		env[m.key] = v
	}
	return env, nil
}
