package supervise

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// The watchdog protocol (see "The watchdog" in doc.go): the supervisor
// writes one message a line to the watchdog's control pipe, each a verb
// and at most one argument:
//
//	run "RUNID"       the run's marker: kill every process whose environment
//	                  holds NUMASTEAL_SUPERVISOR=RUNID.<task>
//	cgroup "DIR"      the run's cgroup directory: cgroup.kill it, then
//	                  remove it and the task cgroups below it
//	memcg "DIR"       the tasks' v1 memory cgroup: SIGKILL its members,
//	                  then remove it
//	leaf "DIR"        the v2 cgroup the supervisor moved to from its
//	                  parent, which then enabled the memory controller:
//	                  disable it, move back there and remove DIR
//	temp "PATH"       remove PATH (a file or a tree) when cleaning
//	forget "PATH"     PATH is no longer to be removed
//	tokens N          the supervisor now holds N jobserver tokens; write N
//	                  bytes back to the token descriptor when cleaning
//	bye               the supervisor ended cleanly: exit without cleaning
//
// Strings are Go-quoted (strconv.Quote), so a path may hold any byte,
// newlines and spaces included. Later messages replace earlier ones (run,
// cgroup, memcg, leaf, tokens) or add to and remove from a set (temp, forget). End of
// file without bye means the supervisor died: clean.

// verb is the kind of a watchdog message.
type verb uint8

const (
	verbRun verb = iota + 1
	verbCgroup
	verbMemcg
	verbLeaf
	verbTemp
	verbForget
	verbTokens
	verbBye
)

// verbNames are the protocol's words, indexed by verb.
var verbNames = [...]string{verbRun: "run", verbCgroup: "cgroup", verbMemcg: "memcg", verbLeaf: "leaf", verbTemp: "temp", verbForget: "forget", verbTokens: "tokens", verbBye: "bye"}

// message is one line of the watchdog protocol.
type message struct {
	verb verb
	arg  string // run, cgroup, memcg, leaf, temp, forget
	n    int    // tokens
}

// errProtocol is wrapped by every parse error of the watchdog protocol.
var errProtocol = errors.New("supervise: watchdog protocol")

// encode returns m as one line, newline included.
func (m message) encode() []byte {
	b := []byte(verbNames[m.verb])
	switch m.verb {
	case verbRun, verbCgroup, verbMemcg, verbLeaf, verbTemp, verbForget:
		b = append(b, ' ')
		b = strconv.AppendQuote(b, m.arg)
	case verbTokens:
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(m.n), 10)
	}
	return append(b, '\n')
}

// parseMessage parses one line (without its newline).
func parseMessage(line []byte) (message, error) {
	word, rest, hasArg := bytes.Cut(line, []byte{' '})
	var m message
	for v, name := range verbNames {
		if name != "" && string(word) == name {
			m.verb = verb(v)
		}
	}
	switch m.verb {
	case 0:
		return message{}, fmt.Errorf("%w: unknown verb %q", errProtocol, word)
	case verbBye:
		if hasArg {
			return message{}, fmt.Errorf("%w: bye takes no argument", errProtocol)
		}
		return m, nil
	}
	if !hasArg {
		return message{}, fmt.Errorf("%w: %s needs an argument", errProtocol, word)
	}
	if m.verb == verbTokens {
		n, err := strconv.Atoi(string(rest))
		if err != nil || n < 0 || strconv.Itoa(n) != string(rest) {
			return message{}, fmt.Errorf("%w: tokens %q is not a count", errProtocol, rest)
		}
		m.n = n
		return m, nil
	}
	s, err := strconv.Unquote(string(rest))
	if err != nil || rest[0] != '"' {
		return message{}, fmt.Errorf("%w: %s %q is not a quoted string", errProtocol, word, rest)
	}
	if m.verb == verbRun && !validRunID(s) {
		return message{}, fmt.Errorf("%w: run id %q", errProtocol, s)
	}
	if s == "" {
		return message{}, fmt.Errorf("%w: %s with an empty string", errProtocol, word)
	}
	m.arg = s
	return m, nil
}

// validRunID reports whether id may name a run: 1 to 64 letters, digits,
// '-' and '_', so that "NUMASTEAL_SUPERVISOR=<id>." is a prefix of this
// run's markers and of no other run's.
func validRunID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}
