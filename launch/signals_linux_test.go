package launch

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestElfSymbols: elfSymbols finds in a Go program what debug/elf finds,
// and nothing for a name that is not there. (The test binary itself is
// linked without a symbol table.)
func TestElfSymbols(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build a program with a symbol table: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "prog")
	build := exec.Command(goCmd, "build", "-o", prog, src)
	build.Env = append(os.Environ(), "GO111MODULE=off", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	names := []string{"runtime.MemProfileRate", "runtime.fwdSig", "runtime.initSigmask", "runtime.main", "no.such.symbol"}
	got := elfSymbols(prog, names...)
	f, err := elf.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]elfSym{}
	for _, s := range syms {
		for _, n := range names {
			if s.Name == n {
				want[n] = elfSym{value: s.Value, size: s.Size}
			}
		}
	}
	if len(want) != 4 {
		t.Fatalf("debug/elf found %d of the 4 names: %v", len(want), want)
	}
	for _, n := range names {
		if got[n] != want[n] {
			t.Errorf("%s: %+v, debug/elf says %+v", n, got[n], want[n])
		}
	}
	if _, ok := got["no.such.symbol"]; ok {
		t.Error("found a symbol that is not there")
	}
	if got := elfSymbols(t.TempDir(), names...); len(got) != 0 {
		t.Errorf("a directory has symbols: %v", got)
	}
}
