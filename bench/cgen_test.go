package bench

import (
	"bytes"
	"math"
	"slices"
	"testing"
)

func TestGenerateCDeterministic(t *testing.T) {
	cfg := CGenConfig{Seed: 7, Files: 30, Headers: 4, GroupSize: 8}
	a, b := GenerateC(cfg), GenerateC(cfg)
	if len(a.Files) != len(b.Files) || len(a.Tasks) != len(b.Tasks) {
		t.Fatalf("same seed, different sizes: %d/%d files, %d/%d tasks", len(a.Files), len(b.Files), len(a.Tasks), len(b.Tasks))
	}
	for i := range a.Files {
		if a.Files[i].Path != b.Files[i].Path || !bytes.Equal(a.Files[i].Data, b.Files[i].Data) {
			t.Fatalf("same seed, file %d differs: %s vs %s", i, a.Files[i].Path, b.Files[i].Path)
		}
	}
	for i := range a.Tasks {
		if a.Tasks[i].CommandLine() != b.Tasks[i].CommandLine() || !slices.Equal(a.Tasks[i].Deps, b.Tasks[i].Deps) {
			t.Fatalf("same seed, task %d differs", i)
		}
	}
	c := GenerateC(CGenConfig{Seed: 8, Files: 30, Headers: 4, GroupSize: 8})
	if slices.Equal(CGenFunctions(cfg), CGenFunctions(CGenConfig{Seed: 8, Files: 30})) {
		t.Error("seeds 7 and 8 drew the same function counts")
	}
	if bytes.Equal(a.Files[5].Data, c.Files[5].Data) && bytes.Equal(a.Files[10].Data, c.Files[10].Data) {
		t.Error("seeds 7 and 8 wrote the same files")
	}
}

// TestCGenFunctionsPinned pins the default corpus: a change of generator
// that alters it must change this test, and the docs' figures.
func TestCGenFunctionsPinned(t *testing.T) {
	got := CGenFunctions(CGenConfig{})
	if len(got) != 496 {
		t.Fatalf("default corpus has %d files, want 496", len(got))
	}
	sum := 0
	for _, n := range got {
		sum += n
	}
	if want := 16403; sum != want {
		t.Errorf("default corpus has %d functions, want %d", sum, want)
	}
}

// TestCGenSpread checks that the modelled compile times of the default
// corpus spread like git's compiles (min 0.05 s, median 0.22 s, p90
// 0.64 s, max 2.7 s).
func TestCGenSpread(t *testing.T) {
	counts := CGenFunctions(CGenConfig{})
	secs := make([]float64, len(counts))
	for i, n := range counts {
		secs[i] = cgenBaseSec + float64(n)*cgenFuncSec
	}
	slices.Sort(secs)
	q := func(p float64) float64 { return secs[int(math.Round(p*float64(len(secs)-1)))] }
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"min", secs[0], 0.05}, {"median", q(0.5), 0.22}, {"p90", q(0.9), 0.64}, {"max", secs[len(secs)-1], 2.7},
	} {
		if math.Abs(c.got-c.want) > 0.25*c.want {
			t.Errorf("%s compile time %.3f s, want %.2f s ± 25%%", c.name, c.got, c.want)
		}
	}
}

func TestGenerateCStructure(t *testing.T) {
	c := GenerateC(CGenConfig{Seed: 3, Files: 10, Headers: 3, GroupSize: 4})
	// 10 compiles + 3 archives + main.o + the link.
	if got, want := len(c.Tasks), 10+3+2; got != want {
		t.Fatalf("%d tasks, want %d", got, want)
	}
	if got := c.Compiles(); got != 11 {
		t.Errorf("%d compiles, want 11", got)
	}
	last := c.Tasks[len(c.Tasks)-1]
	if last.Output != "bin/app" || len(last.Deps) != 4 {
		t.Errorf("final link = %s with deps %v, want bin/app after main.o and 3 archives", last.Output, last.Deps)
	}
	lv, err := c.levels()
	if err != nil {
		t.Fatal(err)
	}
	if len(lv) != 3 || len(lv[0]) != 11 || len(lv[1]) != 3 || len(lv[2]) != 1 {
		t.Errorf("levels %d (sizes %d...), want compiles, archives, link", len(lv), len(lv[0]))
	}
}
