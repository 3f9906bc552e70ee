package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMemoryBudget: eight "links" of 100 MiB each under a 300 MiB budget
// with make -j8 (800 MiB at once unchecked). The first build learns their
// peak RSS (each first guess, 1 GiB, is clamped to the budget: they run
// one at a time); in the second, the MiB of the links running at once
// never exceed the budget, and the build completes.
func TestMemoryBudget(t *testing.T) {
	need(t, "make")
	const links, mb, budget = 8, 100, 300
	e := newEnv(t, fmt.Sprintf("--mem %dM --slots 8", budget))
	dir := t.TempDir()
	exe, _ := os.Executable()
	var targets []string
	for i := range links {
		targets = append(targets, fmt.Sprintf("l%d", i))
	}
	mk := "all: " + strings.Join(targets, " ") + "\nl%:\n\t$(LINK) -o $@\n"
	os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644)
	counter := filepath.Join(dir, "counter")
	for round := 1; round <= 2; round++ {
		os.Remove(counter)
		for _, tg := range targets {
			os.Remove(filepath.Join(dir, tg))
		}
		c := e.cmd(dir, "make", "-j8", "LINK="+e.launcher()+" "+exe)
		c.Env = append(c.Env, "NUMASTEAL_TEST_HELPER=touch", fmt.Sprintf("MB=%d", mb), "COUNTER="+counter)
		run(t, c)
		var cur, peak int
		b, _ := os.ReadFile(counter)
		fmt.Sscanf(string(b), "%d %d", &cur, &peak)
		t.Logf("build %d: at most %d MiB of links at once (budget %d MiB)", round, peak, budget)
		if peak > budget {
			t.Errorf("build %d: %d MiB of links ran at once, budget %d MiB", round, peak, budget)
		}
	}
}
