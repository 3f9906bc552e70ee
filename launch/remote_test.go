package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFarmCompile(t *testing.T) {
	dir := t.TempDir()
	bin, masq := filepath.Join(dir, "bin"), filepath.Join(dir, "masq")
	for _, d := range []string{bin, masq} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"gcc", "distcc"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(bin, "distcc"), filepath.Join(masq, "gcc")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	gcc := filepath.Join(bin, "gcc")
	args := strings.Fields("-O2 -c a.c -o a.o")
	tests := []struct {
		name, arg0, prog string
		args             []string
		compiler         string // "" when it stays local
	}{
		{"found in PATH", "gcc", gcc, args, "gcc"},
		{"a link", "gcc", gcc, strings.Fields("-o prog a.o"), ""},
		{"a path outside /usr/bin", gcc, gcc, args, ""},
		{"a distcc masquerade", "gcc", filepath.Join(masq, "gcc"), args, ""},
	}
	if _, err := os.Stat("/usr/bin/gcc"); err == nil {
		tests = append(tests, struct {
			name, arg0, prog string
			args             []string
			compiler         string
		}{"a path in /usr/bin", "/usr/bin/gcc", "/usr/bin/gcc", args, "/usr/bin/gcc"})
	}
	// remote is what the launcher does: farmCompile when it asks, and
	// findDistcc when a host is granted.
	remote := func(arg0, prog string, args []string) (distcc, compiler string, ok bool) {
		if compiler, ok = farmCompile(arg0, append([]string{prog}, args...)); !ok {
			return "", "", false
		}
		distcc, ok = findDistcc(prog)
		return distcc, compiler, ok
	}
	for _, tc := range tests {
		distcc, compiler, ok := remote(tc.arg0, tc.prog, tc.args)
		if ok != (tc.compiler != "") || ok && (compiler != tc.compiler || distcc != filepath.Join(bin, "distcc")) {
			t.Errorf("%s: remote = %q %q %v, want compiler %q", tc.name, distcc, compiler, ok, tc.compiler)
		}
	}
	t.Setenv("PATH", masq) // no distcc in PATH
	if _, _, ok := remote("gcc", gcc, args); ok {
		t.Error("a remote compile without distcc in PATH")
	}
}
