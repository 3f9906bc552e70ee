package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// buildLog is a verbose build's output in the shapes Debian builds print:
// make -w directory messages, libtool's echo of the real command, cmake's
// "cd DIR && cc", an ar without s, and lines that are not commands.
const buildLog = `dh build
	dh_auto_configure
make[1]: Entering directory '/src/lib'
cc -O2 -c -o obj/zstd.o zstd.c
libtool: compile:  x86_64-linux-gnu-gcc -O2 -c lapi.c  -fPIC -DPIC -o .libs/lapi.o
x86_64-linux-gnu-gcc -DLUA -c "quoted name.c" -o q.o
ar cr libz.a obj/zstd.o .libs/lapi.o
echo done > stamp
cc -O2 -MM zstd.c
make[1]: Leaving directory '/src/lib'
cd /src/prog && /usr/bin/cc -O2 -c main.c -o main.o
cd /src/prog && /usr/bin/cc -o zstd main.o ../lib/libz.a
gcc -o /elsewhere/x main.o
gcc --version
`

func TestParseBuildLog(t *testing.T) {
	c, err := ParseBuildLog("/src", strings.NewReader(buildLog))
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id, dir string
		compile bool
		deps    []string
		args0   string
	}
	want := []row{
		{"lib/obj/zstd.o", "lib", true, nil, "cc"},
		{"lib/.libs/lapi.o", "lib", true, nil, "x86_64-linux-gnu-gcc"},
		{"lib/q.o", "lib", true, nil, "x86_64-linux-gnu-gcc"},
		{"lib/libz.a", "lib", false, []string{"lib/obj/zstd.o", "lib/.libs/lapi.o"}, "ar"},
		{"prog/main.o", "prog", true, nil, "/usr/bin/cc"},
		{"prog/zstd", "prog", false, []string{"prog/main.o", "lib/libz.a"}, "/usr/bin/cc"},
	}
	if len(c.Tasks) != len(want) {
		for _, t2 := range c.Tasks {
			t.Logf("%+v", t2)
		}
		t.Fatalf("%d tasks, want %d", len(c.Tasks), len(want))
	}
	for i, w := range want {
		g := c.Tasks[i]
		if g.ID != w.id || g.Dir != w.dir || g.Compile != w.compile || !slices.Equal(g.Deps, w.deps) || g.Args[0] != w.args0 {
			t.Errorf("task %d = {%s %s %v %v %s}, want %+v", i, g.ID, g.Dir, g.Compile, g.Deps, g.Args[0], w)
		}
	}
	if got := c.Tasks[3].Args[1]; got != "crs" {
		t.Errorf("ar modifiers %q, want crs (s added)", got)
	}
	if got := c.Tasks[2].Args[3]; got != "quoted name.c" {
		t.Errorf("quoted argument %q, want %q", got, "quoted name.c")
	}
}

func TestParseBuildLogEmpty(t *testing.T) {
	if _, err := ParseBuildLog("/src", strings.NewReader("make: Nothing to be done\n")); err == nil {
		t.Error("a log without compiles parsed without error")
	}
}

func TestDeriveDebSrc(t *testing.T) {
	deb822 := `Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: https://deb.nodesource.com/node_20.x
Suites: nodistro
Components: main
`
	have, st := deriveDebSrc("debian.sources", deb822)
	if have || len(st) != 1 || !strings.HasPrefix(st[0], "Types: deb-src\nURIs: http://deb.debian.org/debian\n") || !strings.Contains(st[0], "Signed-By:") {
		t.Errorf("deb822: have=%v stanzas=%q", have, st)
	}
	if have, _ := deriveDebSrc("x.sources", "Types: deb deb-src\nURIs: http://deb.debian.org/debian\n"); !have {
		t.Error("deb822 with deb-src: not seen")
	}
	have, st = deriveDebSrc("sources.list", "deb [signed-by=/k.gpg] http://deb.debian.org/debian bookworm main contrib\n# deb-src off\n")
	if have || len(st) != 1 || !strings.Contains(st[0], "Suites: bookworm\nComponents: main contrib\nSigned-By: /k.gpg\n") {
		t.Errorf("one-line: have=%v stanzas=%q", have, st)
	}
	if have, _ := deriveDebSrc("sources.list", "deb-src http://deb.debian.org/debian bookworm main\n"); !have {
		t.Error("one-line deb-src: not seen")
	}
}

// TestParseBuildLogNoPrintDirectory: a sub-make with --no-print-directory
// (zstd's) prints commands relative to a directory it never names; the
// parser finds it from the source file.
func TestParseBuildLogNoPrintDirectory(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "lib", "decompress"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "lib", "decompress", "huf.c"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	log := "cc -O2 -c -o obj/huf.o decompress/huf.c\nar rcs libzstd.a obj/huf.o\n"
	c, err := ParseBuildLog(root, strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Tasks) != 2 || c.Tasks[0].Dir != "lib" || c.Tasks[0].ID != "lib/obj/huf.o" || c.Tasks[1].ID != "lib/libzstd.a" {
		t.Errorf("tasks %+v, want both in lib", c.Tasks)
	}
}
