//go:build linux

package supervise

import "testing"

func TestParseStat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want proc
		ok   bool
	}{
		{"12 (sleep) S 1 12 12 0 -1", proc{12, 1, 12, 'S'}, true},
		{"7 (a b) c)) Z 3 4 5", proc{7, 3, 4, 'Z'}, true},
		{"7 (x) S 3", proc{}, false},
		{"x (x) S 3 4", proc{}, false},
		{"", proc{}, false},
	} {
		got, ok := parseStat([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestHasMarker(t *testing.T) {
	env := []byte("A=1\x00NUMASTEAL_SUPERVISOR=r1.12\x00B=2\x00")
	for _, c := range []struct {
		prefix string
		want   bool
	}{
		{"NUMASTEAL_SUPERVISOR=r1.12\x00", true},
		{"NUMASTEAL_SUPERVISOR=r1.1\x00", false},
		{"NUMASTEAL_SUPERVISOR=r1.", true},
		{"NUMASTEAL_SUPERVISOR=r10.", false},
	} {
		if got := hasMarker(env, c.prefix); got != c.want {
			t.Errorf("hasMarker(%q) = %v, want %v", c.prefix, got, c.want)
		}
	}
}

// FuzzParseStat: no input panics.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("12 (sleep) S 1 12 12 0 -1"))
	f.Fuzz(func(t *testing.T, b []byte) { parseStat(b) })
}
