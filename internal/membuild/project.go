package membuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// MemhogPackage is memhog's import path.
const MemhogPackage = "github.com/numasteal/numasteal/internal/memtest/memhog"

// BuildMemhog builds memhog into dir with the go command (run where the
// numasteal module's source is: its tests, or "go run" in its tree) and
// returns its path, and the path of a link to it named cc in a directory
// of its own (so that launch's classification sees a C compiler).
func BuildMemhog(dir string) (memhog, cc string, err error) {
	memhog = filepath.Join(dir, "memhog")
	c := exec.Command("go", "build", "-o", memhog, MemhogPackage)
	if out, err := c.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("membuild: building memhog: %w\n%s", err, out)
	}
	cc, err = CCLink(memhog, dir)
	return memhog, cc, err
}

// CCLink makes dir/ccbin/cc, a link to memhog, and returns its path.
func CCLink(memhog, dir string) (string, error) {
	bin := filepath.Join(dir, "ccbin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", fmt.Errorf("membuild: %w", err)
	}
	cc := filepath.Join(bin, "cc")
	if err := os.Symlink(memhog, cc); err != nil {
		return "", fmt.Errorf("membuild: %w", err)
	}
	return cc, nil
}

// WriteProject writes a make project of compiles into dir: one source
// per entry of mib, each needing that many MiB for about ms
// milliseconds, compiled by $(CC) into an object, an "all" target over
// them and a "clean" one. It returns the object names.
func WriteProject(dir string, mib []int, ms int) ([]string, error) {
	var objs []string
	for i, m := range mib {
		src := fmt.Sprintf("f%03d.c", i)
		obj := fmt.Sprintf("f%03d.o", i)
		text := fmt.Sprintf("/* memhog mem=%d ms=%d */\nint f%d(void) { return %d; }\n", m, ms, i, i)
		if err := os.WriteFile(filepath.Join(dir, src), []byte(text), 0o644); err != nil {
			return nil, fmt.Errorf("membuild: %w", err)
		}
		objs = append(objs, obj)
	}
	mk := "all: " + strings.Join(objs, " ") + "\n%.o: %.c\n\t$(CC) -c $< -o $@\nclean:\n\trm -f *.o\n"
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644); err != nil {
		return nil, fmt.Errorf("membuild: %w", err)
	}
	return objs, nil
}
