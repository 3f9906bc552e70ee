// Command memhog is the compiler of the memory tests: it compiles like
// "cc -c SRC -o OUT" and really allocates. SRC names what its compile
// needs in a line "memhog mem=MiB ms=MILLISECONDS": memhog maps that
// much anonymous memory, touches it a page at a time over the first half
// of the time (as a compiler's heap grows), holds it for the rest, then
// writes OUT (a copy of SRC) and exits 0. It ends as the kernel ends it:
// an OOM kill is a SIGKILL, as for cc1.
package main

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

func main() {
	var src, out string
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-o" && i+1 < len(args):
			out = args[i+1]
			i++
		case strings.HasPrefix(a, "-"):
		default:
			src = a
		}
	}
	if src == "" || out == "" {
		fmt.Fprintln(os.Stderr, "usage: memhog [-c] SRC -o OUT")
		os.Exit(2)
	}
	text, err := os.ReadFile(src)
	if err != nil {
		fmt.Fprintln(os.Stderr, "memhog:", err)
		os.Exit(1)
	}
	mib, ms := 0, 0
	if i := strings.Index(string(text), "memhog "); i >= 0 {
		fmt.Sscanf(string(text[i:]), "memhog mem=%d ms=%d", &mib, &ms)
	}
	if mib > 0 {
		mem, err := syscall.Mmap(-1, 0, mib<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			fmt.Fprintln(os.Stderr, "memhog: mmap:", err)
			os.Exit(1)
		}
		ramp := time.Duration(ms) * time.Millisecond / 2
		start := time.Now()
		const page = 4096
		pages := len(mem) / page
		const steps = 50
		for s := 1; s <= steps; s++ {
			for p := (s - 1) * pages / steps; p < s*pages/steps; p++ {
				mem[p*page] = 1
			}
			if d := time.Until(start.Add(ramp * time.Duration(s) / steps)); d > 0 {
				time.Sleep(d)
			}
		}
		if d := time.Until(start.Add(time.Duration(ms) * time.Millisecond)); d > 0 {
			time.Sleep(d)
		}
		defer syscall.Munmap(mem)
	}
	if err := os.WriteFile(out, text, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "memhog:", err)
		os.Exit(1)
	}
}
