package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// The generated C project: the default kernbench corpus, needing nothing
// from outside.
//
// Compile times are drawn, by seed, from a log-normal fitted to git's 496
// compiles timed on a quiet 2-CPU machine of the project (min 0.05 s,
// median 0.22 s, p90 0.64 s, max 2.7 s): median 0.22 s, σ = ln(0.64/0.22)
// / 1.2816 = 0.833, clamped to [0.05 s, 2.7 s]. What the seed fixes is not
// seconds but function counts: a drawn time t becomes
// round((t - cgenBaseSec) / cgenFuncSec) functions, with the two constants
// measured once with gcc 12.2 -O2 (user time; see docs/BENCHMARKS.md),
// so the corpus is byte-for-byte the same on every machine and only its
// compile times scale with the machine.

// CGenConfig describes a generated C project. Zero fields take defaults.
type CGenConfig struct {
	// Seed fixes every choice; 0 means 1.
	Seed uint64
	// Files is the number of translation units besides main.c; 0 means 496.
	Files int
	// Headers is the number of shared headers; 0 means 12.
	Headers int
	// GroupSize is how many objects one archive (link step) takes; 0 means 32.
	GroupSize int
	// CC is the compiler; "" means "gcc".
	CC string
}

// Calibration of the generator (gcc 12.2.0 -O2 on the project's Debian 12
// machine, user seconds): a file of n generated functions compiles in about
// cgenBaseSec + n·cgenFuncSec.
const (
	cgenBaseSec = 0.022
	cgenFuncSec = 0.0093

	cgenMedianSec = 0.22
	cgenSigma     = 0.833
	cgenMinSec    = 0.05
	cgenMaxSec    = 2.7
)

// QuickCGen returns the --quick corpus: a few dozen files, the same
// spread. (A function, not a variable: no package-level mutable state.)
func QuickCGen() CGenConfig { return CGenConfig{Seed: 1, Files: 16, Headers: 4, GroupSize: 4} }

func (c CGenConfig) withDefaults() CGenConfig {
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Files <= 0 {
		c.Files = 496
	}
	if c.Headers <= 0 {
		c.Headers = 12
	}
	if c.GroupSize <= 0 {
		c.GroupSize = 32
	}
	if c.CC == "" {
		c.CC = "gcc"
	}
	return c
}

// cgenRand is the generator's random source: PCG (whose output Go fixes)
// and a Box-Muller normal written here, so no library change can alter the
// corpus.
type cgenRand struct{ pcg *rand.PCG }

func (r cgenRand) float() float64 { return float64(r.pcg.Uint64()>>11) / (1 << 53) }

func (r cgenRand) intn(n int) int { return int(r.pcg.Uint64() % uint64(n)) }

func (r cgenRand) normal() float64 {
	u1 := max(r.float(), 1e-300)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*r.float())
}

// CGenFunctions returns the function count of each translation unit of the
// project cfg describes.
func CGenFunctions(cfg CGenConfig) []int {
	cfg = cfg.withDefaults()
	r := cgenRand{rand.NewPCG(cfg.Seed, 0x6e756d6173746561)}
	counts := make([]int, cfg.Files)
	for i := range counts {
		t := cgenMedianSec * math.Exp(cgenSigma*r.normal())
		t = min(max(t, cgenMinSec), cgenMaxSec)
		counts[i] = max(1, int(math.Round((t-cgenBaseSec)/cgenFuncSec)))
	}
	return counts
}

// GenerateC returns the C project cfg describes: shared headers, Files
// translation units in groups of GroupSize, one archive per group (ar) and
// a final link of main.o with every archive. The same cfg always yields the
// same files and commands.
func GenerateC(cfg CGenConfig) *Corpus {
	cfg = cfg.withDefaults()
	counts := CGenFunctions(cfg)
	r := cgenRand{rand.NewPCG(cfg.Seed, 0x68656164657273)}
	c := &Corpus{Name: fmt.Sprintf("cgen:seed=%d,files=%d", cfg.Seed, cfg.Files)}
	for h := range cfg.Headers {
		c.Files = append(c.Files, CorpusFile{Path: fmt.Sprintf("include/common%02d.h", h), Data: cgenHeader(h)})
	}
	var archives []string
	var group []string
	for i, n := range counts {
		g := i / cfg.GroupSize
		name := fmt.Sprintf("g%02d/f%03d", g, i)
		var inc []int
		for k := 0; k < 2+r.intn(3); k++ {
			inc = append(inc, r.intn(cfg.Headers))
		}
		c.Files = append(c.Files, CorpusFile{Path: "src/" + name + ".c", Data: cgenUnit(i, n, inc)})
		obj := "obj/" + name + ".o"
		c.Tasks = append(c.Tasks, CorpusTask{
			ID: obj, Output: obj, Compile: true,
			Args: []string{cfg.CC, "-O2", "-Iinclude", "-c", "src/" + name + ".c", "-o", obj},
		})
		group = append(group, obj)
		if len(group) == cfg.GroupSize || i == len(counts)-1 {
			lib := fmt.Sprintf("lib/libg%02d.a", g)
			c.Tasks = append(c.Tasks, CorpusTask{
				ID: lib, Output: lib, Deps: group,
				Args: append([]string{"ar", "rcs", lib}, group...),
			})
			archives = append(archives, lib)
			group = nil
		}
	}
	c.Files = append(c.Files, CorpusFile{Path: "src/main.c", Data: cgenMain(cfg.Files)})
	c.Tasks = append(c.Tasks, CorpusTask{
		ID: "obj/main.o", Output: "obj/main.o", Compile: true,
		Args: []string{cfg.CC, "-O2", "-Iinclude", "-c", "src/main.c", "-o", "obj/main.o"},
	})
	link := append([]string{cfg.CC, "-O2", "-o", "bin/app", "obj/main.o"}, archives...)
	c.Tasks = append(c.Tasks, CorpusTask{
		ID: "bin/app", Output: "bin/app", Deps: append([]string{"obj/main.o"}, archives...), Args: link,
	})
	return c
}

// cgenHeader is shared header h: types, macros and static inline helpers
// that every includer parses.
func cgenHeader(h int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "#ifndef COMMON%02d_H\n#define COMMON%02d_H\n#include <stdint.h>\n#include <stddef.h>\n#include <string.h>\n\n", h, h)
	fmt.Fprintf(&b, "struct rec%02d { uint64_t key; uint32_t len; uint8_t data[48]; struct rec%02d *next; };\n", h, h)
	fmt.Fprintf(&b, "#define MIX%02d(a, b) (((a) ^ (b)) * 0x9E3779B97F4A7C15ull + %du)\n", h, h)
	for k := range 16 {
		fmt.Fprintf(&b, "static inline uint64_t h%02d_mix%d(uint64_t a, uint64_t b) { return MIX%02d(a + %d, b >> %d); }\n", h, k, h, k, k%13+1)
	}
	fmt.Fprintf(&b, "\n#endif\n")
	return []byte(b.String())
}

// cgenUnit is translation unit i with n functions of the calibrated body,
// including the headers inc.
func cgenUnit(i, n int, inc []int) []byte {
	var b strings.Builder
	for _, h := range inc {
		fmt.Fprintf(&b, "#include \"common%02d.h\"\n", h)
	}
	b.WriteByte('\n')
	for k := 1; k <= n; k++ {
		prev := max(k-1, 1)
		fmt.Fprintf(&b, `static uint32_t t%d_%d[64];
static uint64_t f%d_%d(const uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t h = seed ^ %du;
	for (size_t k = 0; k < len; k++) {
		h = (h ^ p[k]) * 1099511628211ull;
		if ((h & 7) == %d)
			h += t%d_%d[(h >> 3) & 63];
		else if ((h & 15) > 9)
			h = (h << 13) | (h >> 51);
	}
	for (int j = 0; j < 64; j++)
		t%d_%d[j] = (uint32_t)(h >> (j & 31)) + j * %du;
	switch (h %% 5) {
	case 0: return h * 3;
	case 1: return h ^ (h >> 17);
	case 2: return h + len;
	case 3: return f%d_%d(p, len / 2, h);
	default: return ~h;
	}
}

`, i, k, i, k, k, k%7, i, k, i, k, k, i, prev)
	}
	fmt.Fprintf(&b, "uint64_t unit%03d(const uint8_t *p, size_t len)\n{\n\tuint64_t h = %du;\n", i, i)
	for k := 1; k <= n; k++ {
		fmt.Fprintf(&b, "\th ^= f%d_%d(p, len, h);\n", i, k)
	}
	b.WriteString("\treturn h;\n}\n")
	return []byte(b.String())
}

// cgenMain calls every unit, so the final link pulls every archive member.
func cgenMain(files int) []byte {
	var b strings.Builder
	b.WriteString("#include <stdint.h>\n#include <stddef.h>\n#include <stdio.h>\n\n")
	for i := range files {
		fmt.Fprintf(&b, "uint64_t unit%03d(const uint8_t *p, size_t len);\n", i)
	}
	b.WriteString("\nint main(int argc, char **argv)\n{\n\tuint64_t h = 0;\n\t(void)argv;\n")
	for i := range files {
		fmt.Fprintf(&b, "\th ^= unit%03d((const uint8_t *)\"numasteal\", (size_t)argc + 8);\n", i)
	}
	b.WriteString("\tprintf(\"%llx\\n\", (unsigned long long)h);\n\treturn 0;\n}\n")
	return []byte(b.String())
}
