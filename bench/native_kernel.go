package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The kernel corpus, linux:tinyconfig: Debian's linux-source-6.1 built by
// Kbuild at tinyconfig, the smallest configuration (a few hundred
// compiles), its Makefiles unchanged.
//
// The source is unpacked once into the work directory and never built in:
// every tree is an output directory of its own (make O=DIR), so one
// unpacked source serves them all, as it serves a pair's two builds. The
// rows without the launcher share the tree "plain"; the launcher rows
// build "launch", configured with the same CC and HOSTCC they build with:
// make clean keeps Kbuild's host programs (fixdep, the kconfig tools,
// objtool), and a tree configured by another command line would rebuild
// them in its first build. Each tree is configured once (make tinyconfig,
// then make prepare, so the first timed build does not build the host
// programs that later ones reuse) and reused by later benchmarks in the
// same work directory while its configure command is unchanged.

// Where Debian's linux-source-6.1 puts the kernel source.
const (
	linuxSourcePackage = "linux-source-6.1"
	linuxTarball       = "/usr/src/linux-source-6.1.tar.xz"
	linuxTreeName      = "linux-source-6.1" // the tarball's top directory
)

// linuxConfiguredFile is the file, in a configured output directory,
// that holds the configure command it was configured with.
const linuxConfiguredFile = ".numasteal-configured"

// prepareLinux unpacks and configures the kernel trees of o and returns
// the make rows.
func prepareLinux(ctx context.Context, o NativeOptions, sess *daemonSession) (*nativePlan, error) {
	tarball, err := ensureLinuxTarball(ctx, o.Log)
	if err != nil {
		return nil, err
	}
	src, err := unpackLinux(ctx, tarball, o.Dir, o.Log)
	if err != nil {
		return nil, err
	}
	tree := func(name string) makeTree {
		out := filepath.Join(o.Dir, "linux-out", name)
		return makeTree{dir: src, vars: []string{"O=" + out}, products: []string{filepath.Join(out, "vmlinux")}}
	}
	s := makeSetup{plain: tree("plain"), launch: tree("launch"), launcher: o.Launcher, numasteal: o.Numasteal, cpus: o.CPUs}
	if o.Two {
		b, lb := tree("plain-b"), tree("launch-b")
		s.plainB, s.launchB = &b, &lb
	}
	for _, t := range linuxTrees(s) {
		if err := configureLinuxTree(ctx, t.tree, t.launcher, o.CPUs, sess, o.Log); err != nil {
			return nil, err
		}
	}
	cs, rs := makeContenders(s)
	return &nativePlan{name: NativeLinux + ":tinyconfig", contenders: cs, ratios: rs}, nil
}

// linuxTree is a tree to configure and the launcher it is built with
// ("" for none).
type linuxTree struct {
	tree     makeTree
	launcher string
}

// linuxTrees returns the trees of s with the launcher each is built with.
func linuxTrees(s makeSetup) []linuxTree {
	ts := []linuxTree{{s.plain, ""}, {s.launch, s.launcher}}
	if s.plainB != nil && s.launchB != nil {
		ts = append(ts, linuxTree{*s.plainB, ""}, linuxTree{*s.launchB, s.launcher})
	}
	return ts
}

// linuxConfigureCmds returns the commands that configure t: make
// tinyconfig, then make prepare (at -j 2×cpus), with the launcher's
// variables when launcher is set.
func linuxConfigureCmds(t makeTree, launcher string, cpus int) []nativeCmd {
	vars := t.vars
	if launcher != "" {
		vars = append(vars[:len(vars):len(vars)], launcherMakeVars(launcher)...)
	}
	base := append([]string{"make", "-C", t.dir}, vars...)
	return []nativeCmd{
		{Args: append(base[:len(base):len(base)], "tinyconfig")},
		{Args: append(base[:len(base):len(base)], "-j", strconv.Itoa(2*cpus), "prepare")},
	}
}

// configureLinuxTree configures the output directory of t unless it was
// configured by the same commands before.
func configureLinuxTree(ctx context.Context, t makeTree, launcher string, cpus int, sess *daemonSession, log func(string)) error {
	out := strings.TrimPrefix(t.vars[0], "O=")
	cmds := linuxConfigureCmds(t, launcher, cpus)
	var sig strings.Builder
	for _, c := range cmds {
		sig.WriteString(c.String() + "\n")
	}
	marker := filepath.Join(out, linuxConfiguredFile)
	if old, err := os.ReadFile(marker); err == nil && string(old) == sig.String() {
		if _, err := os.Stat(filepath.Join(out, ".config")); err == nil {
			log("reusing the configured tree " + out)
			return nil
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("bench: linux: %w", err)
	}
	os.Remove(marker)
	for _, c := range cmds {
		start := time.Now()
		log("configure: " + c.String())
		run := func(env []string) error { return c.run(ctx, env) }
		var err error
		if launcher != "" {
			err = sess.withDaemon(run)
		} else {
			err = run(nil)
		}
		if err != nil {
			return fmt.Errorf("bench: linux: configuring %s: %w", out, ctxCause(ctx, err))
		}
		log(fmt.Sprintf("configure: done in %.1fs", time.Since(start).Seconds()))
	}
	if err := os.WriteFile(marker, []byte(sig.String()), 0o644); err != nil {
		return fmt.Errorf("bench: linux: %w", err)
	}
	return nil
}

// ensureLinuxTarball returns the kernel source tarball, installing
// Debian's linux-source-6.1 when it is missing (as root).
func ensureLinuxTarball(ctx context.Context, log func(string)) (string, error) {
	if _, err := os.Stat(linuxTarball); err == nil {
		return linuxTarball, nil
	}
	step := debianStepper(ctx, linuxSourcePackage, log)
	install := []string{"apt-get", "install", "-y", "-q", "--no-install-recommends", linuxSourcePackage}
	env := []string{"DEBIAN_FRONTEND=noninteractive"}
	if _, err := step("install", "/", env, install...); err != nil {
		// The package lists may be missing or old.
		if _, err := step("update", "/", nil, "apt-get", "update", "-q"); err != nil {
			return "", err
		}
		if _, err := step("install", "/", env, install...); err != nil {
			return "", err
		}
	}
	if _, err := os.Stat(linuxTarball); err != nil {
		return "", fmt.Errorf("bench: linux: %s installed, but: %w", linuxSourcePackage, err)
	}
	return linuxTarball, nil
}

// unpackLinux returns the kernel source tree in dir, unpacking tarball
// there first unless an earlier benchmark did. The tarball is unpacked
// into a directory beside the tree, removed on every path, and the tree
// renamed into place once complete, so a tree present is a whole one.
func unpackLinux(ctx context.Context, tarball, dir string, log func(string)) (string, error) {
	tree := filepath.Join(dir, linuxTreeName)
	if _, err := os.Stat(filepath.Join(tree, "Makefile")); err == nil {
		log("reusing the unpacked source " + tree)
		return tree, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("bench: linux: %w", err)
	}
	partial := tree + ".partial"
	if err := os.RemoveAll(partial); err != nil {
		return "", fmt.Errorf("bench: linux: %w", err)
	}
	if err := os.MkdirAll(partial, 0o755); err != nil {
		return "", fmt.Errorf("bench: linux: %w", err)
	}
	defer os.RemoveAll(partial)
	start := time.Now()
	c := nativeCmd{Args: []string{"tar", "-xf", tarball, "-C", partial}}
	log("unpack: " + c.String())
	if err := c.run(ctx, nil); err != nil {
		return "", fmt.Errorf("bench: linux: unpacking: %w", ctxCause(ctx, err))
	}
	log(fmt.Sprintf("unpack: done in %.1fs", time.Since(start).Seconds()))
	if err := os.RemoveAll(tree); err != nil {
		return "", fmt.Errorf("bench: linux: %w", err)
	}
	if err := os.Rename(filepath.Join(partial, linuxTreeName), tree); err != nil {
		return "", fmt.Errorf("bench: linux: the tarball %s has no %s: %w", tarball, linuxTreeName, err)
	}
	return tree, nil
}
