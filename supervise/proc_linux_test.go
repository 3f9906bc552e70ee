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

func TestCgroup2MountAndPath(t *testing.T) {
	mi := "24 1 0:22 / /sys/fs/cgroup ro - tmpfs tmpfs ro\n" +
		"36 24 0:30 / /sys/fs/cgroup/uni\\040fied rw,relatime shared:9 - cgroup2 cgroup2 rw\n"
	if got := cgroup2Mount([]byte(mi)); got != "/sys/fs/cgroup/uni fied" {
		t.Errorf("cgroup2Mount = %q", got)
	}
	if got := cgroup2Mount([]byte("24 1 0:22 / /sys/fs/cgroup ro - tmpfs tmpfs ro\n")); got != "" {
		t.Errorf("cgroup2Mount without cgroup2 = %q", got)
	}
	if p, ok := unifiedPath([]byte("4:memory:/x\n0::/user.slice/a\n")); !ok || p != "/user.slice/a" {
		t.Errorf("unifiedPath = %q, %v", p, ok)
	}
	if _, ok := unifiedPath([]byte("4:memory:/x\n")); ok {
		t.Error("unifiedPath found a v2 line in a v1-only file")
	}
}
