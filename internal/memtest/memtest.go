// Package memtest gives the memory tests what they need to be real, from
// internal/membuild: a memory-limited cgroup of their own, removed when
// the test ends, the compiler memhog that really allocates, and a make
// project of its compiles. A test never reaches the machine-wide OOM
// killer: the limit is its own group's.
package memtest

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/numasteal/numasteal/internal/membuild"
)

// Group is a memory-limited cgroup made for one test.
type Group = membuild.Group

// NewGroup makes a cgroup limited to limit bytes, below the test's own
// memory cgroup, and removes it (killing what is left in it) when the
// test ends. Where no memory cgroup can be made (not root and no
// delegated subtree, or no memory controller) the test is skipped with
// the reason, except under CI=true on a machine that has a memory
// controller, where that is a failure.
func NewGroup(t testing.TB, limit int64) *Group {
	t.Helper()
	g, err := membuild.NewGroup(limit, fmt.Sprintf("numasteal-memtest-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err != nil {
		if os.Getenv("CI") == "true" && membuild.HasController() {
			t.Fatalf("memtest: this machine has a memory controller but the test cannot make a cgroup: %v", err)
		}
		t.Skipf("SKIP: no memory cgroup can be made here: %v", err)
	}
	t.Cleanup(func() {
		if err := g.Remove(); err != nil {
			t.Errorf("memtest: %v", err)
		}
	})
	return g
}

// BuildMemhog builds memhog into dir and returns its path, and the path
// of a link to it named cc in a directory of its own (so that launch's
// classification sees a C compiler).
func BuildMemhog(t testing.TB, dir string) (memhog, cc string) {
	t.Helper()
	memhog, cc, err := membuild.BuildMemhog(dir)
	if err != nil {
		t.Fatal(err)
	}
	return memhog, cc
}

// Project writes a make project of compiles into dir: one source per
// entry of mib, each needing that many MiB for about ms milliseconds,
// compiled by $(CC) into an object, and an "all" target over them.
// It returns the object names.
func Project(t testing.TB, dir string, mib []int, ms int) []string {
	t.Helper()
	objs, err := membuild.WriteProject(dir, mib, ms)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
