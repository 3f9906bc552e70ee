package buildgraph

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The clang compilation database (FormatCompDB; see Format).

// parseCompDB reads a compilation database.
func parseCompDB(name string, data []byte) (*Graph, error) {
	r := newJSONReader(name, data)
	if err := r.checkSyntax(); err != nil {
		return nil, err
	}
	g := &Graph{}
	ids := make(map[string]bool)
	err := r.array("the compilation database", func(i int, off int) error {
		t, err := parseEntry(r, i)
		if err != nil {
			return err
		}
		if ids[t.ID] {
			t.ID += " (entry " + strconv.Itoa(i+1) + ")"
		}
		ids[t.ID] = true
		g.Tasks = append(g.Tasks, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	return g, nil
}

// parseEntry reads entry i of a compilation database.
func parseEntry(r *jsonReader, i int) (*Task, error) {
	who := "entry " + strconv.Itoa(i+1)
	start, fields, err := r.object(who)
	if err != nil {
		return nil, err
	}
	fr := fieldReader{r: r, who: who}
	var (
		dir, file, output, command string
		args                       []string
		haveCommand, haveArgs      bool
		commandOff                 int
	)
	for _, f := range fields {
		if isNull(f.val) {
			continue
		}
		switch f.key {
		case "directory":
			dir, err = fr.str(f)
		case "file":
			file, err = fr.str(f)
		case "output":
			output, err = fr.str(f)
		case "command":
			haveCommand, commandOff = true, f.valOff
			command, err = fr.str(f)
		case "arguments":
			haveArgs = true
			args, err = fr.strs(f)
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case file == "":
		return nil, fr.errorf(start, `missing "file"`)
	case dir == "":
		return nil, fr.errorf(start, `missing "directory"`)
	}
	t := &Task{ID: output, Cwd: dir, CPUs: 1, Pos: r.doc.pos(start)}
	if t.ID == "" {
		t.ID = file
	}
	fr.who = fmt.Sprintf("%s (%q)", who, t.ID)
	fr.task = t.ID
	switch {
	case haveArgs: // "arguments" is preferred when both are present
		if len(args) == 0 || args[0] == "" {
			return nil, fr.errorf(start, `field "arguments": needs a program name as its first element`)
		}
		t.Cmd = args
	case haveCommand:
		words, err := SplitWords(command)
		switch {
		case errors.Is(err, ErrNeedsShell):
			t.Shell = command
		case err != nil:
			return nil, fr.errorf(commandOff, `field "command": %v`, err)
		case len(words) == 0:
			return nil, fr.errorf(commandOff, `field "command": is empty`)
		default:
			t.Cmd = words
		}
	default:
		return nil, fr.errorf(start, `has neither "arguments" nor "command"`)
	}
	if strings.IndexByte(t.CommandLine(), 0) >= 0 {
		return nil, fr.errorf(start, "the command holds a NUL byte")
	}
	return t, nil
}
