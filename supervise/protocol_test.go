package supervise

import (
	"errors"
	"testing"
)

func TestMessageRoundTrip(t *testing.T) {
	for _, m := range []message{
		{verb: verbRun, arg: "1234-abcd"},
		{verb: verbCgroup, arg: "/sys/fs/cgroup/numasteal-1"},
		{verb: verbMemcg, arg: "/sys/fs/cgroup/memory/numasteal-1"},
		{verb: verbLeaf, arg: "/sys/fs/cgroup/a/numasteal-1-self"},
		{verb: verbTemp, arg: "/tmp/a b\nc\"d"},
		{verb: verbForget, arg: "/tmp/x"},
		{verb: verbTokens, n: 0},
		{verb: verbTokens, n: 17},
		{verb: verbBye},
	} {
		line := m.encode()
		got, err := parseMessage(line[:len(line)-1])
		if err != nil || got != m {
			t.Errorf("parseMessage(%q) = %+v, %v; want %+v", line, got, err, m)
		}
	}
}

func TestParseMessageErrors(t *testing.T) {
	for _, line := range []string{
		"", "hello", "bye x", "run", "run abc", `run "a.b"`, `run ""`, `temp ""`,
		"tokens", "tokens -1", "tokens 01", "tokens x", `tokens "3"`, `temp 'x'`, "temp `x`",
	} {
		if m, err := parseMessage([]byte(line)); !errors.Is(err, errProtocol) {
			t.Errorf("parseMessage(%q) = %+v, %v; want a protocol error", line, m, err)
		}
	}
}

// FuzzParseMessage: no input panics, and what parses encodes back to a line
// that parses to the same message.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{`run "1-a"`, `cgroup "/x"`, `memcg "/m"`, `leaf "/l"`, `temp "a\nb"`, "tokens 3", "bye", `forget "\xff"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := parseMessage(line)
		if err != nil {
			return
		}
		enc := m.encode()
		m2, err := parseMessage(enc[:len(enc)-1])
		if err != nil || m2 != m {
			t.Fatalf("%q parsed to %+v, encoded %q, reparsed %+v, %v", line, m, enc, m2, err)
		}
	})
}
