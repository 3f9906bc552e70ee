package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// CorpusOptions says which corpus LoadCorpus prepares.
type CorpusOptions struct {
	// Spec is "cgen", "cgen:SEED" or "debian:SRCPKG".
	Spec string
	// Quick selects the small generated corpus (QuickCGen).
	Quick bool
	// Files, when positive, overrides the generated corpus's file count.
	Files int
	// Dir is the work directory the corpus goes under.
	Dir string
	// Log, when not nil, receives one line per preparation step.
	Log func(string)
}

// LoadCorpus prepares the corpus o describes under o.Dir and returns it
// ready to build (Corpus.Dir set).
func LoadCorpus(ctx context.Context, o CorpusOptions) (*Corpus, error) {
	log := o.Log
	if log == nil {
		log = func(string) {}
	}
	kind, arg, _ := strings.Cut(o.Spec, ":")
	switch kind {
	case "", "cgen":
		cfg := CGenConfig{}
		if o.Quick {
			cfg = QuickCGen()
		}
		if arg != "" {
			seed, err := strconv.ParseUint(arg, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bench: corpus %q: the seed must be a number: %w", o.Spec, err)
			}
			cfg.Seed = seed
		}
		if o.Files > 0 {
			cfg.Files = o.Files
		}
		c := GenerateC(cfg)
		log("writing " + c.Name)
		if err := c.Write(filepath.Join(o.Dir, "cgen")); err != nil {
			return nil, err
		}
		return c, nil
	case "debian":
		if arg == "" {
			return nil, fmt.Errorf("bench: corpus %q: name a source package (debian:libzstd)", o.Spec)
		}
		return LoadDebian(ctx, DebianOptions{Package: arg, Dir: o.Dir, Log: log})
	}
	return nil, fmt.Errorf("bench: unknown corpus %q (want cgen, cgen:SEED or debian:SRCPKG; linux:tinyconfig and debian-cmake:SRCPKG are native builds, see RunNative)", o.Spec)
}
