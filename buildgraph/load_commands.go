package buildgraph

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The command file (FormatCommands; see Format).

// parseCommands reads a command file.
func parseCommands(name string, data []byte) (*Graph, error) {
	g := &Graph{}
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		text := strings.TrimRight(string(line), "\r")
		trimmed := strings.TrimLeft(text, " \t")
		col := len(text) - len(trimmed) + 1
		trimmed = strings.TrimRight(trimmed, " \t")
		if i, why := binaryByte(text); i >= 0 {
			// Checked on comments too: a binary file is refused whole.
			return nil, &Error{Pos: Pos{File: name, Line: n, Col: i + 1}, Msg: why + "; a command file must be text (is this a binary file?)", Err: ErrSyntax}
		}
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		id := "line " + strconv.Itoa(n)
		pos := Pos{File: name, Line: n, Col: col}
		g.Tasks = append(g.Tasks, &Task{ID: id, Shell: trimmed, CPUs: 1, Pos: pos})
	}
	return g, nil
}

// binaryByte returns the offset of the first byte of a command line that
// text does not hold (invalid UTF-8, NUL, a control character other than
// tab) and what it is, or -1.
func binaryByte(line string) (int, string) {
	for i := 0; i < len(line); {
		c := line[i]
		if c < utf8.RuneSelf {
			switch {
			case c == 0:
				return i, "a NUL byte"
			case c < 0x20 && c != '\t' || c == 0x7f:
				return i, fmt.Sprintf("the control character 0x%02x", c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(line[i:])
		if r == utf8.RuneError && size == 1 {
			return i, fmt.Sprintf("invalid UTF-8 (byte 0x%02x)", c)
		}
		i += size
	}
	return -1, ""
}
