package launch

import (
	"debug/elf"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
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

// TestIgnoredNow: the ignored signals read from /proc/self/status are
// those rt_sigaction reports, with one more ignored by the test.
func TestIgnoredNow(t *testing.T) {
	signal.Ignore(syscall.SIGUSR2)
	defer signal.Reset(syscall.SIGUSR2)
	var want uint64
	for sig := 1; sig <= 64; sig++ {
		if h, ok := sigHandler(sig); ok && h == sigIgn {
			want |= 1 << (sig - 1)
		}
	}
	if want&(1<<(syscall.SIGUSR2-1)) == 0 {
		t.Fatal("SIGUSR2 is not ignored after signal.Ignore")
	}
	if got := ignoredNow(); got != want {
		t.Errorf("ignoredNow %#x, rt_sigaction says %#x", got, want)
	}
}

func TestStatusMask(t *testing.T) {
	status := "Name:\tx\nSigQ:\t0/95\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\n" +
		"SigBlk:\t0000000000000002\nSigIgn:\t0000000000001001\nSigCgt:\tfffffffc7ffefeff\n"
	for _, c := range []struct {
		key  string
		want uint64
		ok   bool
	}{
		{"SigIgn:", 0x1001, true}, {"SigBlk:", 2, true}, {"SigCgt:", 0xfffffffc7ffefeff, true}, {"Nope:", 0, false},
	} {
		if got, ok := statusMask([]byte(status), c.key); got != c.want || ok != c.ok {
			t.Errorf("%s: %#x, %v; want %#x, %v", c.key, got, ok, c.want, c.ok)
		}
	}
	if _, ok := statusMask([]byte("SigIgn:\tnot hex\n"), "SigIgn:"); ok {
		t.Error("a mask that is not hexadecimal was read")
	}
}

func FuzzStatusMask(f *testing.F) {
	f.Add([]byte("SigIgn:\t0000000000001001\n"))
	f.Add([]byte("SigIgn:"))
	f.Add([]byte("x\nSigIgn: ffffffffffffffff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, ok := statusMask(b, "SigIgn:")
		if !ok && n != 0 {
			t.Fatalf("not found but %#x", n)
		}
	})
}
