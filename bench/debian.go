package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The Debian corpus: a real source package, fetched, configured and built
// once at benchmark time with its commands recorded from the build's
// verbose output (make -w names each directory; V=1, VERBOSE=1 and
// DH_VERBOSE=1 print each command). The compile, archive and link commands
// become the corpus; everything else the build did (configure, generated
// headers, symlinks) stays on disk, so the recorded commands can run again
// in any order their dependencies allow.

// DebianOptions says which Debian source package LoadDebian builds.
type DebianOptions struct {
	// Package is the source package (libzstd, lua5.4).
	Package string
	// Suite is the release suite asked for; "" means bookworm.
	Suite string
	// Dir is the work directory; the package goes under Dir/debian-PKG.
	Dir string
	// Log receives one line per step, with how long it took.
	Log func(string)
}

// debianSuite is the release suite a Debian corpus is fetched from
// unless told otherwise.
const debianSuite = "bookworm"

// debianSourcesFile is where LoadDebian writes deb-src entries derived
// from the machine's deb entries when it has none.
const debianSourcesFile = "/etc/apt/sources.list.d/numasteal-deb-src.sources"

// LoadDebian fetches, unpacks, configures and builds o.Package once,
// recording its commands, and returns them as a corpus rooted at the
// unpacked source tree. It needs root for apt-get build-dep (and for
// adding deb-src entries when missing).
func LoadDebian(ctx context.Context, o DebianOptions) (*Corpus, error) {
	if o.Suite == "" {
		o.Suite = debianSuite
	}
	log := o.Log
	if log == nil {
		log = func(string) {}
	}
	work, err := filepath.Abs(filepath.Join(o.Dir, "debian-"+o.Package))
	if err != nil {
		return nil, fmt.Errorf("bench: debian corpus: %w", err)
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, fmt.Errorf("bench: debian corpus: %w", err)
	}
	step := debianStepper(ctx, o.Package, log)
	src := filepath.Join(work, "src")
	logPath := filepath.Join(work, "build.log")
	if data, err := os.ReadFile(logPath); err == nil {
		// Recorded by an earlier run into the same directory: the tree is
		// configured and its log on disk.
		log("reusing the build recorded in " + logPath)
		return parseDebianLog(o.Package, src, data, log)
	}
	spec := o.Package + "/" + o.Suite
	dsc, err := fetchDebianDsc(ctx, step, o.Package, spec, work, log)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(src); err != nil {
		return nil, fmt.Errorf("bench: debian corpus: %w", err)
	}
	if _, err := step("unpack", work, nil, "dpkg-source", "-x", dsc, src); err != nil {
		return nil, err
	}
	if _, err := step("build-dep", work, []string{"DEBIAN_FRONTEND=noninteractive"},
		"apt-get", "build-dep", "-y", "-q", "--no-install-recommends", spec); err != nil {
		return nil, err
	}
	env := []string{"DEB_BUILD_OPTIONS=nocheck nodoc noddebs parallel=1", "DH_VERBOSE=1", "V=1", "VERBOSE=1", "MAKEFLAGS=-w"}
	out, err := step("configure and build once, recording", src, env, "fakeroot", "debian/rules", "build")
	if err != nil {
		// fakeroot is optional for the build target.
		if out, err = step("configure and build once, recording", src, env, "debian/rules", "build"); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(logPath, out, 0o644); err != nil {
		return nil, fmt.Errorf("bench: debian corpus: %w", err)
	}
	return parseDebianLog(o.Package, src, out, log)
}

// debianStep runs one preparation step of a Debian corpus: what names it
// in the log, args run in dir with env added; it returns the combined
// output.
type debianStep func(what string, dir string, env []string, args ...string) ([]byte, error)

// debianStepper returns the step runner of package pkg, logging each
// step and how long it took.
func debianStepper(ctx context.Context, pkg string, log func(string)) debianStep {
	return func(what string, dir string, env []string, args ...string) ([]byte, error) {
		start := time.Now()
		log(what + ": " + strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdin = nil
		out, err := cmd.CombinedOutput()
		log(fmt.Sprintf("%s: done in %.1fs", what, time.Since(start).Seconds()))
		if err != nil {
			return out, fmt.Errorf("bench: debian corpus %s: %s: %w\n%s", pkg, strings.Join(args, " "), err, tail(out, 3000))
		}
		return out, nil
	}
}

// fetchDebianDsc downloads the source package spec (PKG/SUITE) into work
// with apt-get source, adding deb-src entries first when apt has none,
// and returns its .dsc.
func fetchDebianDsc(ctx context.Context, step debianStep, pkg, spec, work string, log func(string)) (string, error) {
	if err := ensureDebSrc(ctx, log); err != nil {
		return "", err
	}
	if _, err := step("fetch", work, nil, "apt-get", "source", "--download-only", "-q", spec); err != nil {
		return "", err
	}
	dscs, _ := filepath.Glob(filepath.Join(work, "*.dsc"))
	if len(dscs) == 0 {
		return "", fmt.Errorf("bench: debian corpus %s: apt-get source left no .dsc in %s", pkg, work)
	}
	return dscs[len(dscs)-1], nil
}

func parseDebianLog(pkg, src string, out []byte, log func(string)) (*Corpus, error) {
	c, err := ParseBuildLog(src, bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("bench: debian corpus %s: %w", pkg, err)
	}
	c.Name = "debian:" + pkg
	log(fmt.Sprintf("recorded %d commands (%d compiles)", len(c.Tasks), c.Compiles()))
	return c, nil
}

// ensureDebSrc adds deb-src entries mirroring the machine's deb entries
// when apt has none, and updates the package lists.
func ensureDebSrc(ctx context.Context, log func(string)) error {
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	lists, _ := filepath.Glob("/etc/apt/sources.list.d/*.list")
	files = append(files, lists...)
	if _, err := os.Stat("/etc/apt/sources.list"); err == nil {
		files = append(files, "/etc/apt/sources.list")
	}
	var stanzas []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		have, derived := deriveDebSrc(f, string(data))
		if have {
			return nil
		}
		stanzas = append(stanzas, derived...)
	}
	if len(stanzas) == 0 {
		return fmt.Errorf("bench: debian corpus: no deb entries in /etc/apt to derive deb-src entries from")
	}
	log("adding deb-src entries: " + debianSourcesFile)
	if err := os.WriteFile(debianSourcesFile, []byte(strings.Join(stanzas, "\n")), 0o644); err != nil {
		return fmt.Errorf("bench: debian corpus: adding deb-src entries (needs root): %w", err)
	}
	cmd := exec.CommandContext(ctx, "apt-get", "update", "-q")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("bench: debian corpus: apt-get update: %w\n%s", err, tail(out, 2000))
	}
	return nil
}

// deriveDebSrc reads one apt sources file (deb822 .sources, or one-line
// .list format) and says whether it already has deb-src entries; if not it
// returns deb822 stanzas of deb-src for its deb entries (Debian's own
// archive only: other vendors' repositories rarely serve sources).
func deriveDebSrc(name, text string) (have bool, stanzas []string) {
	if strings.HasSuffix(name, ".sources") {
		for _, st := range strings.Split(text, "\n\n") {
			var lines []string
			types, debian := "", false
			for _, l := range strings.Split(st, "\n") {
				if strings.HasPrefix(strings.TrimSpace(l), "#") || strings.TrimSpace(l) == "" {
					continue
				}
				k, v, _ := strings.Cut(l, ":")
				switch strings.TrimSpace(k) {
				case "Types":
					types = strings.TrimSpace(v)
					continue
				case "URIs":
					debian = strings.Contains(v, "debian.org")
				case "Enabled":
					if strings.TrimSpace(v) == "no" {
						types = ""
					}
				}
				lines = append(lines, l)
			}
			if strings.Contains(types, "deb-src") {
				return true, nil
			}
			if strings.Contains(types, "deb") && debian {
				stanzas = append(stanzas, "Types: deb-src\n"+strings.Join(lines, "\n")+"\n")
			}
		}
		return false, stanzas
	}
	for _, l := range strings.Split(text, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "deb-src":
			return true, nil
		case "deb":
			rest := f[1:]
			var opts string
			if len(rest) > 0 && strings.HasPrefix(rest[0], "[") {
				opts = rest[0]
				rest = rest[1:]
			}
			if len(rest) >= 3 && strings.Contains(rest[0], "debian.org") {
				st := fmt.Sprintf("Types: deb-src\nURIs: %s\nSuites: %s\nComponents: %s\n", rest[0], rest[1], strings.Join(rest[2:], " "))
				if strings.Contains(opts, "signed-by=") {
					_, sb, _ := strings.Cut(opts, "signed-by=")
					st += "Signed-By: " + strings.TrimRight(strings.Fields(sb)[0], "]") + "\n"
				}
				stanzas = append(stanzas, st)
			}
		}
	}
	return false, stanzas
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// scanLines returns a scanner with room for the long command lines of
// builds.
func scanLines(r *bufio.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	return sc
}
