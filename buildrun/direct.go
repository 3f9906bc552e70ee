package buildrun

import (
	"strings"

	"github.com/numasteal/numasteal/buildgraph"
)

// shellWords are the first words that make a line the shell's business
// even when it splits into plain words: POSIX special and regular
// built-ins that act on the shell itself or have no program of their name,
// and reserved words (GNU make keeps the same list for its fast path).
var shellWords = map[string]bool{
	".": true, ":": true, "alias": true, "bg": true, "break": true, "case": true,
	"cd": true, "command": true, "continue": true, "eval": true, "exec": true,
	"exit": true, "export": true, "fc": true, "fg": true, "for": true, "getopts": true,
	"hash": true, "if": true, "jobs": true, "read": true, "readonly": true,
	"return": true, "set": true, "shift": true, "times": true, "trap": true,
	"type": true, "ulimit": true, "umask": true, "unalias": true, "unset": true,
	"wait": true, "while": true, "until": true, "do": true, "done": true,
	"then": true, "else": true, "elif": true, "fi": true, "esac": true, "in": true,
	"{": true, "}": true, "!": true, "[[": true, "]]": true, "function": true,
	"select": true, "source": true, "local": true, "declare": true, "typeset": true,
	"let": true, "time": true, "coproc": true, "builtin": true,
}

// directArgv returns the words of a shell line that runs one program with
// plain arguments, for exec without a shell, as make runs such a recipe
// line: no expansion, operator, redirection, glob or comment
// (buildgraph.SplitWords), no assignment before the command, and a first
// word that is not a built-in or reserved word. ok is false when the line
// needs sh -c. Running it directly saves a shell's start per task, with the
// same outcome.
func directArgv(line string) (argv []string, ok bool) {
	words, err := buildgraph.SplitWords(line)
	if err != nil || len(words) == 0 || words[0] == "" {
		return nil, false
	}
	first := words[0]
	if shellWords[first] || isAssignment(first) {
		return nil, false
	}
	return words, true
}

// isAssignment reports whether w is NAME=VALUE with a valid shell name.
func isAssignment(w string) bool {
	name, _, found := strings.Cut(w, "=")
	if !found || name == "" {
		return false
	}
	for i, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
