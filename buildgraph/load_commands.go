package buildgraph

import (
	"bytes"
	"strconv"
	"strings"
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
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		id := "line " + strconv.Itoa(n)
		pos := Pos{File: name, Line: n, Col: col}
		if i := strings.IndexByte(trimmed, 0); i >= 0 {
			return nil, &Error{Pos: Pos{File: name, Line: n, Col: col + i}, Task: id, Msg: "a command holds a NUL byte (is this a binary file?)", Err: ErrSyntax}
		}
		g.Tasks = append(g.Tasks, &Task{ID: id, Shell: trimmed, CPUs: 1, Pos: pos})
	}
	return g, nil
}
