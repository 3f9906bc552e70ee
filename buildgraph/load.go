package buildgraph

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Format is a kind of workload file. There are three.
//
// A JSON build graph (FormatGraph):
//
//	{
//	  "tasks": [
//	    {"id": "a.o", "cmd": ["cc", "-c", "a.c"]},
//	    {"id": "app", "shell": "cc -o app a.o", "deps": ["a.o"], "pool": "link",
//	     "cpus": 1, "mem_mb": 200, "cwd": "out", "env": {"LANG": "C"}, "remote": false}
//	  ],
//	  "pools": {"link": 1}
//	}
//
// Every task needs "id" and exactly one of "cmd" (an argv) and "shell" (a
// line for sh -c); the other fields are optional and map onto [Task]
// ("cpus" at least 1, "mem_mb" at least 0). Unknown fields and repeated
// fields are errors, not ignored: a misspelt "dep" would otherwise silently
// drop a dependency. null counts as absent, except for "tasks", which must
// be an array ([] for none). "pools" maps a pool name to its limit, at
// least 1. The file must be UTF-8: invalid UTF-8 is an error at its place,
// not replaced by U+FFFD.
//
// A clang compilation database (FormatCompDB), compile_commands.json as
// specified at https://clang.llvm.org/docs/JSONCompilationDatabase.html:
//
//	[{"directory": "/src/build", "file": "../a.c", "output": "a.o",
//	  "arguments": ["cc", "-c", "../a.c", "-o", "a.o"]}, ...]
//
// Each entry becomes one task with no dependencies: ID is "output" when
// present, else "file"; Cwd is "directory"; the command is "arguments", or
// "command" split with [SplitWords]. A "command" that needs a real shell (a
// pipe, $VAR, a glob) becomes Shell instead. When two entries would share
// an ID (one file compiled in two configurations without "output"), the
// later gets " (entry N)" appended, N counting entries from 1. Unknown
// fields are ignored: tools add their own.
//
// A command file (FormatCommands) holds shell commands, one per line, as
// for `xargs -P` or GNU parallel:
//
//	# comments and blank lines are skipped
//	gzip -9 a.log
//	gzip -9 b.log
//
// Each other line becomes a task with Shell set to the line (blanks around
// it removed, a CRLF ending accepted), ID "line N" (N counting every line of
// the file from 1) and no dependencies. The file must be text: a line with
// invalid UTF-8, a NUL byte or another control character but tab is an
// error (a binary file given by mistake is refused whole, not fed to sh
// line by line).
//
// Every format's file is read only when it is a regular file of at most
// MaxWorkloadBytes (256 MiB); see LoadFile.
type Format int

// The workload formats.
const (
	FormatAuto     Format = iota // detect with DetectFormat
	FormatGraph                  // JSON build graph: {"tasks": [...], "pools": {...}}
	FormatCompDB                 // clang compilation database: [{"directory", "file", ...}]
	FormatCommands               // shell commands, one per line
)

var formatNames = [...]string{"auto", "graph", "compdb", "commands"}

// String returns "auto", "graph", "compdb" or "commands".
func (f Format) String() string {
	if f < 0 || int(f) >= len(formatNames) {
		return fmt.Sprintf("Format(%d)", int(f))
	}
	return formatNames[f]
}

// describe names the format in prose.
func (f Format) describe() string {
	switch f {
	case FormatGraph:
		return "JSON build graph"
	case FormatCompDB:
		return "compilation database"
	case FormatCommands:
		return "file of shell commands"
	}
	return f.String()
}

// ParseFormat is the inverse of Format.String, for a --format flag.
func ParseFormat(s string) (Format, error) {
	for i, n := range formatNames {
		if s == n {
			return Format(i), nil
		}
	}
	return FormatAuto, fmt.Errorf("buildgraph: unknown format %q (want one of: %s)", s, strings.Join(formatNames[:], ", "))
}

// DetectFormat picks the format of a workload from its name and content: a
// .txt or .sh file is a command file; otherwise a file whose first non-blank
// byte is '{' is a JSON build graph, '[' a compilation database; anything
// else named *.json is read as a build graph (and will fail to parse, with a
// message saying why), and the rest as commands.
//
// A command file whose first command starts with '{' or '[' (a `[ -f x ]`
// test) must therefore be named *.txt, or start with a # comment.
func DetectFormat(name string, data []byte) Format {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".txt", ".sh":
		return FormatCommands
	}
	switch firstByte(data) {
	case '{':
		return FormatGraph
	case '[':
		return FormatCompDB
	}
	if strings.EqualFold(filepath.Ext(name), ".json") {
		return FormatGraph
	}
	return FormatCommands
}

// firstByte returns the first byte that is not a blank, or 0.
func firstByte(data []byte) byte {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 {
		return 0
	}
	return data[0]
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// LoadFile reads, parses and validates the workload in the file at path,
// detecting its format with DetectFormat. Every error is an *Error naming
// the place (file:line:col) and, where there is one, the task; a file that
// cannot be read gives the *os.PathError inside an *Error, so
// errors.Is(err, fs.ErrNotExist) works. Only a regular file of at most
// MaxWorkloadBytes is read (see ReadInput): a named pipe or a device is an
// error wrapping ErrNotRegular, a bigger file one wrapping ErrTooLarge.
func LoadFile(path string) (*Graph, error) {
	return LoadFileAs(path, FormatAuto)
}

// LoadFileAs is LoadFile reading the file in format f (FormatAuto to
// detect it).
func LoadFileAs(path string, f Format) (*Graph, error) {
	data, err := ReadInput(path, MaxWorkloadBytes)
	if err != nil {
		return nil, &Error{Msg: err.Error(), Err: err}
	}
	return Parse(path, data, f)
}

// Parse parses and validates a workload held in memory; name is used in
// positions and for format detection when f is FormatAuto. The returned
// graph has passed Validate.
func Parse(name string, data []byte, f Format) (*Graph, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	sniffed := f == FormatAuto
	if sniffed {
		f = DetectFormat(name, data)
	}
	if (f == FormatGraph || f == FormatCompDB) && firstByte(data) == 0 {
		return nil, &Error{Pos: Pos{File: name}, Msg: fmt.Sprintf("the file is empty; want a %s", f.describe()), Err: ErrSyntax}
	}
	var (
		g   *Graph
		err error
	)
	switch f {
	case FormatGraph:
		g, err = parseGraph(name, data)
	case FormatCompDB:
		g, err = parseCompDB(name, data)
	case FormatCommands:
		g, err = parseCommands(name, data)
	default:
		return nil, &Error{Pos: Pos{File: name}, Msg: fmt.Sprintf("unknown format %v", f), Err: ErrField}
	}
	if err != nil {
		var e *Error
		if sniffed && errors.As(err, &e) && errors.Is(e.Err, ErrSyntax) && (f == FormatGraph || f == FormatCompDB) &&
			!strings.EqualFold(filepath.Ext(name), ".json") {
			e.Msg += fmt.Sprintf(" (read as JSON because it starts with %q; name it *.txt to read shell commands)", firstByte(data))
		}
		return nil, err
	}
	if err := g.Validate(); err != nil {
		return nil, err
	}
	return g, nil
}
