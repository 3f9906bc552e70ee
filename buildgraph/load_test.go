package buildgraph

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// loadErrTests are workloads in testdata/ that must fail, with the exact
// message and kind.
var loadErrTests = []struct {
	file string
	err  string
	kind error
}{
	{"graph_unknown_field.json", `testdata/graph_unknown_field.json:5:6: task "b": unknown field "dep" (want one of: id, cmd, shell, deps, cpus, mem_mb, pool, cwd, env, remote); did you mean "deps"?`, ErrField},
	{"graph_both.json", `testdata/graph_both.json:2:3: task "a": has both "cmd" and "shell"; give one`, ErrField},
	{"graph_neither.json", `testdata/graph_neither.json:2:3: task "a": has neither "cmd" nor "shell"`, ErrField},
	{"graph_dup.json", `testdata/graph_dup.json:4:3: duplicate task id "a" (first at testdata/graph_dup.json:2:3)`, ErrDuplicate},
	{"graph_syntax.json", `testdata/graph_syntax.json:3:3: invalid JSON: invalid character '{' after array element`, ErrSyntax},
	{"graph_truncated.json", `testdata/graph_truncated.json:3:1: invalid JSON: unexpected end of input`, ErrSyntax},
	{"graph_cycle.json", `testdata/graph_cycle.json:3:3: cycle: c -> a -> b -> c`, ErrCycle},
	{"graph_unknown_dep.json", `testdata/graph_unknown_dep.json:3:3: task "b" depends on unknown task "x"`, ErrUnknownDep},
	{"graph_pool.json", `testdata/graph_pool.json:2:3: task "link" uses pool "linker", which is not declared`, ErrPool},
	{"graph_pool_zero.json", `testdata/graph_pool_zero.json:2:20: pool "link": limit must be at least 1, got 0`, ErrPool},
	{"graph_types.json", `testdata/graph_types.json:2:29: task "a": field "cmd": element 1 is a number, want a string`, ErrField},
	{"graph_cpus.json", `testdata/graph_cpus.json:2:40: task "a": field "cpus": want a whole number, got 1.5`, ErrField},
	{"graph_noid.json", `testdata/graph_noid.json:3:3: tasks[1]: missing "id"`, ErrField},
	{"graph_top.json", `testdata/graph_top.json:1:15: unknown top-level field "pool" (want one of: tasks, pools)`, ErrField},
	{"compdb_quote.json", `testdata/compdb_quote.json:2:51: entry 1 ("a.c"): field "command": at byte 6: unterminated single quote`, ErrField},
	{"compdb_nofile.json", `testdata/compdb_nofile.json:2:3: entry 1: missing "file"`, ErrField},
	{"bracket", `testdata/bracket:1:4: invalid JSON: invalid character 'f' in numeric literal (read as JSON because it starts with '['; name it *.txt to read shell commands)`, ErrSyntax},
}

func TestLoadFileErrors(t *testing.T) {
	for _, tt := range loadErrTests {
		t.Run(tt.file, func(t *testing.T) {
			g, err := LoadFile(filepath.Join("testdata", tt.file))
			if err == nil {
				t.Fatalf("LoadFile = %d tasks, want error %q", len(g.Tasks), tt.err)
			}
			if err.Error() != tt.err {
				t.Errorf("error:\n got %s\nwant %s", err, tt.err)
			}
			if !errors.Is(err, tt.kind) {
				t.Errorf("errors.Is(err, %v) = false", tt.kind)
			}
			var e *Error
			if !errors.As(err, &e) || e.Pos.File == "" || e.Pos.Line == 0 {
				t.Errorf("error %#v does not carry a position", err)
			}
		})
	}
}

func TestLoadFileMissing(t *testing.T) {
	path := filepath.Join("testdata", "no-such-file.json")
	_, err := LoadFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("LoadFile(%q) = %v, want fs.ErrNotExist", path, err)
	}
	if want := "open testdata/no-such-file.json: no such file or directory"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

// parseErrTests are inline inputs (named in.json unless name is set) that
// must fail with the exact message.
var parseErrTests = []struct {
	name, in, err string
}{
	{"", `{"a" 1}`, `in.json:1:6: invalid JSON: invalid character '1' after object key`},
	{"", `{"tasks": [1,]}`, `in.json:1:14: invalid JSON: invalid character ']' looking for beginning of value`},
	{"", `{"tasks": [{"id": "a", "shell": x}]}`, `in.json:1:33: invalid JSON: invalid character 'x' looking for beginning of value`},
	{"", `{"tasks":[]} {}`, `in.json:1:14: invalid JSON: invalid character '{' after top-level value`},
	{"", `{"tasks":[]} x`, `in.json:1:14: invalid JSON: invalid character 'x' after top-level value`},
	{"", `{`, `in.json:1:2: invalid JSON: unexpected end of input`},
	{"", "{\"tasks\": [\n  {\"id\": \"a\", \"shell\": \"x\"}\n  {\"id\": \"b\"}]}", `in.json:3:3: invalid JSON: invalid character '{' after array element`},
	{"", `{"a": 1, "tasks": [{"id": "b", "cpus": 1.5.1}]}`, `in.json:1:43: invalid JSON: invalid character '.' after object key:value pair`},
	{"", ``, `in.json: the file is empty; want a JSON build graph`},
	{"", "  \n", `in.json: the file is empty; want a JSON build graph`},
	{"", `{}`, `in.json:1:1: the build graph has no "tasks" field`},
	{"", `{"tasks": {}}`, `in.json:1:11: field "tasks": want an array, got an object`},
	{"", `{"tasks": ["a"]}`, `in.json:1:12: tasks[0]: want an object, got a string`},
	{"", `{"tasks": [{"id": "a", "shell": "x", "env": {"A": 1}}]}`, `in.json:1:51: task "a": field "env": "A": want a string, got a number`},
	{"", `{"tasks": [{"id": "a", "shell": "x", "env": {"A=B": "1"}}]}`, `in.json:1:46: task "a": field "env": variable name "A=B" is empty or holds '=' or NUL`},
	{"", `{"tasks": [{"id": "a", "shell": "x", "id": "b"}]}`, `in.json:1:38: tasks[0]: field "id" appears twice`},
	{"", `{"tasks": [{"id": 5, "shell": "x"}]}`, `in.json:1:19: tasks[0]: field "id": want a string, got a number`},
	{"", `{"tasks": [{"id": "", "shell": "x"}]}`, `in.json:1:19: tasks[0]: field "id": must not be empty`},
	{"", `{"tasks": [{"id": "a", "cmd": []}]}`, `in.json:1:31: task "a": field "cmd": needs a program name as its first element`},
	{"", `{"tasks": [{"id": "a", "shell": " "}]}`, `in.json:1:33: task "a": field "shell": must not be empty`},
	{"", `{"tasks": [{"id": "a", "shell": "x", "deps": ["a"]}]}`, `in.json:1:12: cycle: a -> a`},
	{"", `{"tasks": [{"id": "a", "shell": "x", "mem_mb": -1}]}`, `in.json:1:48: task "a": field "mem_mb": must be at least 0, got -1`},
	{"", `{"tasks": [{"id": "a", "shell": "x", "cpus": 0}]}`, `in.json:1:46: task "a": field "cpus": must be at least 1, got 0`},
	{"", `{"tasks": [{"id": "a", "shell": "x", "cpus": 1e3}]}`, `in.json:1:46: task "a": field "cpus": want a whole number, got 1e3`},
	{"", `{"tasks": [{"id": "a", "shell": "x", "cpus": 99999999999}]}`, `in.json:1:46: task "a": field "cpus": want a whole number, got 99999999999`},
	{"", `{"tasks": [{"id": "a", "shell": "x", "remote": "yes"}]}`, `in.json:1:48: task "a": field "remote": want true or false, got a string`},
	{"", `{"tasks": [{"id": "a", "shell": "\u0000"}]}`, `in.json:1:33: task "a": field "shell": holds a NUL byte`},
	{"", `{"tasks": [{"id": "a", "cmd": ["cc", "\u0000"]}]}`, `in.json:1:31: task "a": field "cmd": an argument holds a NUL byte`},
	{"", `{"tasks": [], "pools": [1]}`, `in.json:1:24: field "pools": want an object of pool limits, got an array`},
	{"", `{"tasks": [], "pools": {"": 1}}`, `in.json:1:25: a pool name must not be empty`},
	{"", `{"tasks": [], "pools": {"l": "1"}}`, `in.json:1:30: pool "l": want a whole number as its limit, got "1"`},
	{"", `"x"`, `in.json:1:1: the build graph: want an object, got a string`},
	{"", `[{"directory": "/", "file": "a.c"}]`, `in.json:1:2: entry 1 ("a.c"): has neither "arguments" nor "command"`},
	{"", `[{"directory": "/", "file": "a.c", "command": ""}]`, `in.json:1:47: entry 1 ("a.c"): field "command": is empty`},
	{"", `[{"directory": "/", "file": "a.c", "arguments": []}]`, `in.json:1:2: entry 1 ("a.c"): field "arguments": needs a program name as its first element`},
	{"", `[{"file": "a.c", "command": "cc"}]`, `in.json:1:2: entry 1: missing "directory"`},
	{"", `[3]`, `in.json:1:2: entry 1: want an object, got a number`},
	{"", `[{"directory": "/", "file": 3}]`, `in.json:1:29: entry 1: field "file": want a string, got a number`},
	{"cmds", "ok\nbad \x00 line\n", `cmds:2:5: a NUL byte; a command file must be text (is this a binary file?)`},
	// Bad input that used to be accepted without a word.
	{"", `{"tasks": null}`, `in.json:1:11: field "tasks": want an array of tasks, got null (write [] for no tasks)`},
	{"", "{\"tasks\": [{\"id\": \"a\xffb\", \"shell\": \"x\"}]}", `in.json:1:21: invalid UTF-8 (byte 0xff); the file must be UTF-8 text`},
	{"", "[{\"directory\": \"/\",\n \"file\": \"\xc3(\", \"command\": \"cc\"}]", `in.json:2:11: invalid UTF-8 (byte 0xc3); the file must be UTF-8 text`},
	{"", `{"tasks": [{"id": "a\u0000b", "shell": "x"}]}`, `in.json:1:12: tasks[0]: the task id "a\x00b" holds the control character U+0000 at byte 1`},
	{"", `{"tasks": [{"id": "a\u001b[31m", "shell": "x"}]}`, `in.json:1:12: tasks[0]: the task id "a\x1b[31m" holds the control character U+001B at byte 1`},
	{"", `{"tasks": [{"id": "a\u0085", "shell": "x"}]}`, `in.json:1:12: tasks[0]: the task id "a\u0085" holds the control character U+0085 at byte 1`},
	{"", `{"tasks": [{"id": "` + strings.Repeat("x", MaxIDBytes+1) + `", "shell": "x"}]}`, `in.json:1:12: tasks[0]: the task id "` + strings.Repeat("x", 60) + `"... (4097 bytes) is 4097 bytes long, more than 4096`},
	{"", `{"tasks": [{"id": "a", "shell": "` + strings.Repeat("x", MaxArgBytes+1) + `"}]}`, `in.json:1:12: task "a": its shell command is 131072 bytes long, more than 131071 (the kernel's limit for one argument)`},
	{"", `{"tasks": [{"id": "a", "shell": "x", "deps": ["` + strings.Repeat("y", 100) + `"]}]}`, `in.json:1:12: task "a" depends on unknown task "` + strings.Repeat("y", 60) + `"... (100 bytes)`},
	{"cmds", "echo \xff\xfe\n", `cmds:1:6: invalid UTF-8 (byte 0xff); a command file must be text (is this a binary file?)`},
	{"cmds", "# ok\necho \x1b[2J\n", `cmds:2:6: the control character 0x1b; a command file must be text (is this a binary file?)`},
	{"cmds", "\x7fELF\x02\x01\x01\n", `cmds:1:1: the control character 0x7f; a command file must be text (is this a binary file?)`},
}

func TestParseErrors(t *testing.T) {
	for _, tt := range parseErrTests {
		name := tt.name
		if name == "" {
			name = "in.json"
		}
		g, err := Parse(name, []byte(tt.in), FormatAuto)
		if err == nil {
			t.Errorf("Parse(%q) = %d tasks, want error %q", tt.in, len(g.Tasks), tt.err)
			continue
		}
		if err.Error() != tt.err {
			t.Errorf("Parse(%q):\n got %s\nwant %s", tt.in, err, tt.err)
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q): error %T is not an *Error", tt.in, err)
		}
	}
}

func TestLoadGraph(t *testing.T) {
	g, err := LoadFile("testdata/graph_ok.json")
	if err != nil {
		t.Fatal(err)
	}
	const f = "testdata/graph_ok.json"
	want := &Graph{
		Tasks: []*Task{
			{ID: "a.o", Cmd: []string{"cc", "-c", "a.c", "-o", "a.o"}, CPUs: 1, Pos: Pos{f, 3, 5}},
			{ID: "b.o", Cmd: []string{"cc", "-c", "b.c", "-o", "b.o"}, CPUs: 1, MemMB: 200, Pos: Pos{f, 4, 5}},
			{ID: "app", Shell: "cc -o app a.o b.o && strip app", Deps: []string{"a.o", "b.o"},
				Pool: "link", CPUs: 2, Cwd: "out", Env: map[string]string{"LANG": "C"}, Pos: Pos{f, 5, 5}},
		},
		Pools:   map[string]int{"link": 1},
		poolPos: map[string]Pos{"link": {f, 8, 13}},
	}
	if !reflect.DeepEqual(g, want) {
		t.Errorf("LoadFile:\n got %s\nwant %s", dumpGraph(g), dumpGraph(want))
	}
}

func TestLoadCompDB(t *testing.T) {
	g, err := LoadFile("testdata/compile_commands.json")
	if err != nil {
		t.Fatal(err)
	}
	const f = "testdata/compile_commands.json"
	want := []*Task{
		{ID: "a.o", Cmd: []string{"cc", "-c", "../a.c", "-o", "a.o"}, Cwd: "/src/build", CPUs: 1, Pos: Pos{f, 2, 3}},
		{ID: "../b.c", Cmd: []string{"cc", "-DNAME=b c", "-c", "../b.c"}, Cwd: "/src/build", CPUs: 1, Pos: Pos{f, 4, 3}},
		// Needs a shell (a pipe); the same file again gets a unique ID.
		{ID: "../b.c (entry 3)", Shell: "cc -c ../b.c -o /dev/null 2>&1 | tee log", Cwd: "/src/build", CPUs: 1, Pos: Pos{f, 6, 3}},
	}
	if !reflect.DeepEqual(g.Tasks, want) {
		t.Errorf("LoadFile:\n got %s\nwant %s", dumpGraph(g), dumpGraph(&Graph{Tasks: want}))
	}
}

func TestLoadCommands(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []*Task
	}{
		{"commands.txt", []*Task{
			{ID: "line 2", Shell: "gzip -9 a.log", CPUs: 1, Pos: Pos{"testdata/commands.txt", 2, 1}},
			{ID: "line 4", Shell: `gzip -9 "b c.log"`, CPUs: 1, Pos: Pos{"testdata/commands.txt", 4, 4}},
			{ID: "line 6", Shell: "false", CPUs: 1, Pos: Pos{"testdata/commands.txt", 6, 1}},
		}},
		// A .txt name keeps a leading '[' from being read as JSON.
		{"bracket.txt", []*Task{
			{ID: "line 1", Shell: "[ -f x ] && echo yes", CPUs: 1, Pos: Pos{"testdata/bracket.txt", 1, 1}},
		}},
	} {
		g, err := LoadFile(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g.Tasks, tt.want) {
			t.Errorf("%s:\n got %s\nwant %s", tt.file, dumpGraph(g), dumpGraph(&Graph{Tasks: tt.want}))
		}
	}
}

func TestDetectFormat(t *testing.T) {
	for _, tt := range []struct {
		name, data string
		want       Format
	}{
		{"build.json", `{"tasks": []}`, FormatGraph},
		{"compile_commands.json", " \n[]", FormatCompDB},
		{"x.json", "", FormatGraph},
		{"x.json", "gcc -c a.c", FormatGraph},
		{"cmds", "gcc -c a.c", FormatCommands},
		{"cmds", "{ echo a; }", FormatGraph},
		{"cmds.txt", "{ echo a; }", FormatCommands},
		{"run.sh", "[ -f x ]", FormatCommands},
		{"cmds", "", FormatCommands},
	} {
		if got := DetectFormat(tt.name, []byte(tt.data)); got != tt.want {
			t.Errorf("DetectFormat(%q, %q) = %v, want %v", tt.name, tt.data, got, tt.want)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range []Format{FormatAuto, FormatGraph, FormatCompDB, FormatCommands} {
		got, err := ParseFormat(f.String())
		if err != nil || got != f {
			t.Errorf("ParseFormat(%q) = %v, %v", f.String(), got, err)
		}
	}
	if _, err := ParseFormat("ninja"); err == nil {
		t.Error("ParseFormat(ninja) succeeded")
	}
}

func TestParseExplicitFormat(t *testing.T) {
	// A command file that starts with '{' runs as commands when asked.
	g, err := Parse("cmds", []byte("{ echo a; }\n"), FormatCommands)
	if err != nil || len(g.Tasks) != 1 || g.Tasks[0].Shell != "{ echo a; }" {
		t.Fatalf("Parse = %v, %v", g, err)
	}
	// A UTF-8 byte order mark is ignored.
	g, err = Parse("x.json", []byte("\ufeff{\"tasks\": [{\"id\": \"a\", \"shell\": \"true\"}]}"), FormatAuto)
	if err != nil || len(g.Tasks) != 1 {
		t.Fatalf("Parse with BOM = %v, %v", g, err)
	}
	// Empty inputs are empty graphs, not errors, for commands.
	g, err = Parse("cmds", nil, FormatAuto)
	if err != nil || len(g.Tasks) != 0 {
		t.Fatalf("Parse(empty) = %v, %v", g, err)
	}
}
