package topology

import (
	"reflect"
	"testing"
)

func TestParseProcCgroup(t *testing.T) {
	tests := []struct {
		in   string
		want []cgroupLine
		line string
		err  string
	}{
		{"11:pids:/\n7:cpuset:/jjh\n2:cpuacct,cpu:/system.slice/sshd.service\n1:name=systemd:/user.slice\n0::/user.slice/session-1.scope\n",
			[]cgroupLine{
				{11, []string{"pids"}, "/"},
				{7, []string{"cpuset"}, "/jjh"},
				{2, []string{"cpuacct", "cpu"}, "/system.slice/sshd.service"},
				{1, []string{"name=systemd"}, "/user.slice"},
				{0, nil, "/user.slice/session-1.scope"},
			}, "", ""},
		{"0::/a:b\n", []cgroupLine{{0, nil, "/a:b"}}, "", ""},
		{"", nil, "", ""},
		{"garbage\n", nil, "garbage", "cgroup line is not id:controllers:/path: invalid syntax"},
		{"x:cpu:/\n", nil, "x:cpu:/", `hierarchy id "x": invalid syntax`},
		{"1:cpu:relative\n", nil, "1:cpu:relative", "cgroup line is not id:controllers:/path: invalid syntax"},
	}
	for _, tt := range tests {
		got, line, err := parseProcCgroup([]byte(tt.in))
		if !reflect.DeepEqual(got, tt.want) || line != tt.line || errString(err) != tt.err {
			t.Errorf("parseProcCgroup(%q) = %v, %q, %v; want %v, %q, %q", tt.in, got, line, err, tt.want, tt.line, tt.err)
		}
	}
}

func TestParseMountinfo(t *testing.T) {
	in := "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" +
		"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime shared:5 - cgroup cgroup rw,cpu\n" +
		"41 31 0:38 /docker/abc /sys/fs/cgroup/my\\040dir rw - cgroup2 cgroup2 rw\n"
	want := []mount{
		{Root: "/", Dir: "/sys/fs/cgroup", FSType: "tmpfs", Options: []string{"rw", "relatime", "rw", "mode=755"}},
		{Root: "/", Dir: "/sys/fs/cgroup/cpu", FSType: "cgroup", Options: []string{"rw", "relatime", "rw", "cpu"}},
		{Root: "/docker/abc", Dir: "/sys/fs/cgroup/my dir", FSType: "cgroup2", Options: []string{"rw", "rw"}},
	}
	got, line, err := parseMountinfo([]byte(in))
	if !reflect.DeepEqual(got, want) || line != "" || err != nil {
		t.Errorf("parseMountinfo = %+v, %q, %v; want %+v", got, line, err, want)
	}
	for _, bad := range []string{"1 2 3\n", "31 23 0:28 / /sys rw shared:1\n", "31 23 0:28 / /sys rw - cgroup\n"} {
		if _, line, err := parseMountinfo([]byte(bad)); errString(err) != `mountinfo line lacks "- type source options": invalid syntax` || line == "" {
			t.Errorf("parseMountinfo(%q) = %q, %v; want a syntax error", bad, line, err)
		}
	}
}

func TestParseMounts(t *testing.T) {
	in := "none /dev/cpuset cpuset rw 0 0\ncgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,cpuacct,cpu 0 0\n\n"
	want := []mount{
		{Root: "/", Dir: "/dev/cpuset", FSType: "cpuset", Options: []string{"rw"}},
		{Root: "/", Dir: "/sys/fs/cgroup/cpu,cpuacct", FSType: "cgroup", Options: []string{"rw", "nosuid", "cpuacct", "cpu"}},
	}
	got, _, err := parseMounts([]byte(in))
	if !reflect.DeepEqual(got, want) || err != nil {
		t.Errorf("parseMounts = %+v, %v; want %+v", got, err, want)
	}
	if !got[1].hasOption("cpu") || got[1].hasOption("cpuset") {
		t.Errorf("hasOption is wrong on %v", got[1].Options)
	}
	if _, line, err := parseMounts([]byte("none /x\n")); line != "none /x" || errString(err) != "mount line has 2 fields, want 6: invalid syntax" {
		t.Errorf("parseMounts(short line) = %q, %v", line, err)
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/a\040b`:   "/a b",
		`/a\011b`:   "/a\tb",
		`/plain`:    "/plain",
		`/bad\09`:   `/bad\09`,
		`/end\04`:   `/end\04`,
		`/big\777x`: `/big\777x`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseCPUMax(t *testing.T) {
	for _, tt := range []struct {
		in            string
		quota, period int64
		limited       bool
		err           string
	}{
		{"max 100000\n", 0, 100000, false, ""},
		{"150000 100000", 150000, 100000, true, ""},
		{"max", 0, 0, false, `cpu.max is not "quota period": invalid syntax`},
		{"lots 100000", 0, 0, false, `quota "lots": invalid syntax`},
		{"0 100000", 0, 0, false, `quota "0": invalid syntax`},
		{"100 0", 0, 0, false, `period "0": invalid syntax`},
		{"100 x", 0, 0, false, `period "x": invalid syntax`},
	} {
		q, p, l, err := parseCPUMax(tt.in)
		if q != tt.quota || p != tt.period || l != tt.limited || errString(err) != tt.err {
			t.Errorf("parseCPUMax(%q) = %d, %d, %v, %v; want %d, %d, %v, %q", tt.in, q, p, l, err, tt.quota, tt.period, tt.limited, tt.err)
		}
	}
}

func TestInMount(t *testing.T) {
	for _, tt := range []struct {
		root, cg, want string
		ok             bool
	}{
		{"/", "/a/b", "/a/b", true},
		{"/docker/abc", "/docker/abc", "/", true},
		{"/docker/abc", "/docker/abc/x", "/x", true},
		{"/docker/abc", "/docker/abcdef", "", false},
		{"/docker/abc", "/", "", false},
	} {
		got, ok := inMount(mount{Root: tt.root}, tt.cg)
		if got != tt.want || ok != tt.ok {
			t.Errorf("inMount(%q, %q) = %q, %v; want %q, %v", tt.root, tt.cg, got, ok, tt.want, tt.ok)
		}
	}
}
