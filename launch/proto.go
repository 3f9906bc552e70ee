package launch

import (
	"errors"
	"fmt"
	"strconv"
)

// The wire protocol between a launcher and the daemon ("Protocol" in the
// package documentation). Every message is one line:
//
//	ns1 VERB key=value key=value\n
//
// "ns1" names the protocol and its version; VERB is lower-case letters; a
// key is lower-case letters, digits and '_'; a value is any bytes, with
// '%', '=', space, and bytes outside '!'..'~' written as %XX. A line is at
// most MaxLine bytes, newline included.

// Version is the protocol version this package speaks ("ns1").
const Version = 1

// MaxLine bounds one message line, newline included.
const MaxLine = 64 << 10

const magic = "ns1"

// Errors of ParseMsg, compared with errors.Is.
var (
	// ErrVersion: the line names another version of the protocol
	// ("ns2 ..."), or no protocol at all.
	ErrVersion = errors.New("unknown protocol version")
	// ErrMalformed: the line breaks the grammar above.
	ErrMalformed = errors.New("malformed message")
)

// Msg is one protocol message: a verb and its fields in order.
type Msg struct {
	Verb   string
	Fields []Field
}

// Field is one key=value of a Msg.
type Field struct{ Key, Value string }

// NewMsg returns a message with verb and the key, value pairs kv (an even
// number of strings).
func NewMsg(verb string, kv ...string) Msg {
	if len(kv)%2 != 0 {
		panic("launch: NewMsg: odd number of key, value strings")
	}
	m := Msg{Verb: verb, Fields: make([]Field, 0, len(kv)/2)}
	for i := 0; i < len(kv); i += 2 {
		m.Fields = append(m.Fields, Field{kv[i], kv[i+1]})
	}
	return m
}

// Get returns the value of key, and whether the message has it.
func (m Msg) Get(key string) (string, bool) {
	for _, f := range m.Fields {
		if f.Key == key {
			return f.Value, true
		}
	}
	return "", false
}

// Int returns the value of key as a decimal int64; ok is false when it is
// missing or not a number.
func (m Msg) Int(key string) (n int64, ok bool) {
	v, ok := m.Get(key)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// Append appends the encoded line of m, newline included, to b. It panics
// on a verb or key outside the grammar (a programming error).
func (m Msg) Append(b []byte) []byte {
	if !validWord(m.Verb, false) {
		panic("launch: Msg.Append: bad verb " + strconv.Quote(m.Verb))
	}
	b = append(b, magic...)
	b = append(b, ' ')
	b = append(b, m.Verb...)
	for _, f := range m.Fields {
		if !validWord(f.Key, true) {
			panic("launch: Msg.Append: bad key " + strconv.Quote(f.Key))
		}
		b = append(b, ' ')
		b = append(b, f.Key...)
		b = append(b, '=')
		b = appendEscaped(b, f.Value)
	}
	return append(b, '\n')
}

// String returns the encoded line of m without its newline.
func (m Msg) String() string {
	b := m.Append(nil)
	return string(b[:len(b)-1])
}

// ParseMsg parses one line, with or without its newline. It never panics;
// errors wrap ErrVersion or ErrMalformed.
func ParseMsg(line []byte) (Msg, error) {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if len(line) >= MaxLine {
		return Msg{}, fmt.Errorf("%w: line of %d bytes", ErrMalformed, len(line))
	}
	tok, rest := cut(line)
	if string(tok) != magic {
		return Msg{}, fmt.Errorf("%w: %.20q", ErrVersion, tok)
	}
	verb, rest := cut(rest)
	if !validWord(string(verb), false) {
		return Msg{}, fmt.Errorf("%w: bad verb %.20q", ErrMalformed, verb)
	}
	m := Msg{Verb: string(verb)}
	for len(rest) > 0 {
		var kv []byte
		kv, rest = cut(rest)
		eq := -1
		for i, c := range kv {
			if c == '=' {
				eq = i
				break
			}
		}
		if eq < 0 || !validWord(string(kv[:eq]), true) {
			return Msg{}, fmt.Errorf("%w: bad field %.20q", ErrMalformed, kv)
		}
		v, err := unescape(kv[eq+1:])
		if err != nil {
			return Msg{}, err
		}
		m.Fields = append(m.Fields, Field{string(kv[:eq]), v})
	}
	return m, nil
}

// cut splits b at its first space: the word before and what follows. Two
// spaces in a row give an empty word, which every caller refuses.
func cut(b []byte) (word, rest []byte) {
	for i, c := range b {
		if c == ' ' {
			return b[:i], b[i+1:]
		}
	}
	return b, nil
}

// validWord reports whether s is a verb (lower-case letters) or, with key,
// a key (also digits and '_'): 1 to 32 bytes.
func validWord(s string, key bool) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z':
		case key && ('0' <= c && c <= '9' || c == '_'):
		default:
			return false
		}
	}
	return true
}

// needsEscape reports whether c is written as %XX in a value.
func needsEscape(c byte) bool { return c <= ' ' || c > '~' || c == '%' || c == '=' }

const hexDigits = "0123456789ABCDEF"

func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(c) {
			b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
		} else {
			b = append(b, c)
		}
	}
	return b
}

func unescape(v []byte) (string, error) {
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '%' {
			if i+2 >= len(v) {
				return "", fmt.Errorf("%w: short %%XX escape", ErrMalformed)
			}
			hi, ok1 := unhex(v[i+1])
			lo, ok2 := unhex(v[i+2])
			if !ok1 || !ok2 {
				return "", fmt.Errorf("%w: bad %%XX escape", ErrMalformed)
			}
			out = append(out, hi<<4|lo)
			i += 2
			continue
		}
		if needsEscape(c) {
			return "", fmt.Errorf("%w: unescaped byte %#x in a value", ErrMalformed, c)
		}
		out = append(out, c)
	}
	return string(out), nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
