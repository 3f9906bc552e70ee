package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// peerSources are the peer programs of bench forkjoin --peers
// (bench/peers/README.md). They are built from this copy, outside the
// source tree, so that the numasteal binary alone can build and run them.
//
//go:embed peers
var peerSources embed.FS

// debianCargoRegistry is where Debian's librust-*-dev packages put their
// crates, the directory source the Rayon peer is built against offline.
const debianCargoRegistry = "/usr/share/cargo/registry"

// peerNeed is one thing a peer's build needs and the Debian package that
// brings it: a program on PATH, or a file glob.
type peerNeed struct {
	program, glob, pkg string
}

// peerSpec is a peer program: its sources, what its build needs, and how
// it is built.
type peerSpec struct {
	name  string // rayon, tbb, openmp: its directory under peers/
	title string // the runtime as the table names it; %s is the version
	fork  string // its fork, as the table names it
	sum   string // its parallel loop, which the sum uses
	// compiler is the program that compiles it (the table names its
	// version: it matters as much as the library's).
	compiler string
	needs    []peerNeed
	// build compiles the sources copied to src into bin and returns the
	// version of the library it linked, when the program cannot tell.
	build func(ctx context.Context, src, bin string) (version string, err error)
}

var peerSpecs = []peerSpec{
	{
		name: "rayon", title: "Rayon %s", fork: "join", sum: "par_iter", compiler: "rustc",
		needs: []peerNeed{
			{program: "cargo", pkg: "cargo"},
			{program: "rustc", pkg: "rustc"},
			{glob: debianCargoRegistry + "/rayon-[0-9]*", pkg: "librust-rayon-dev"},
			{glob: debianCargoRegistry + "/libc-[0-9]*", pkg: "librust-libc-dev"},
		},
		build: buildRayon,
	},
	{
		name: "tbb", title: "oneTBB %s", fork: "task_group", sum: "parallel_reduce", compiler: "g++",
		needs: []peerNeed{
			{program: "g++", pkg: "g++"},
			{glob: "/usr/include/oneapi/tbb/task_group.h", pkg: "libtbb-dev"},
		},
		build: func(ctx context.Context, src, bin string) (string, error) {
			return "", runTool(ctx, src, nil, "g++", "-O2", "-std=c++17", "-I", filepath.Join(src, "common"),
				"-o", bin, filepath.Join(src, "tbb", "tbb.cc"), "-ltbb")
		},
	},
	{
		name: "openmp", title: "OpenMP %s", fork: "tasks", sum: "parallel for", compiler: "g++",
		needs: []peerNeed{{program: "g++", pkg: "g++"}},
		build: func(ctx context.Context, src, bin string) (string, error) {
			return "", runTool(ctx, src, nil, "g++", "-O2", "-std=c++17", "-fopenmp", "-I", filepath.Join(src, "common"),
				"-o", bin, filepath.Join(src, "openmp", "openmp.cc"))
		},
	},
}

// missing returns the Debian packages that would bring what p's build
// needs and this machine lacks, each once, and what is missing.
func (p peerSpec) missing() (pkgs []string, what []string) {
	for _, n := range p.needs {
		ok := true
		if n.program != "" {
			_, err := exec.LookPath(n.program)
			ok = err == nil
		} else if m, _ := filepath.Glob(n.glob); len(m) == 0 {
			ok = false
		}
		if !ok {
			what = append(what, n.program+n.glob)
			if !strings.Contains(" "+strings.Join(pkgs, " ")+" ", " "+n.pkg+" ") {
				pkgs = append(pkgs, n.pkg)
			}
		}
	}
	return pkgs, what
}

// PeerSkip names a peer that was not run and why.
type PeerSkip struct {
	Peer   string `json:"peer"`
	Reason string `json:"reason"`
}

// builtPeer is a peer program ready to run.
type builtPeer struct {
	spec     peerSpec
	bin      string
	version  string // from the build; "" when the program reports it
	compiler string // "rustc 1.63.0", "g++ 12.2.0"
}

// buildPeers builds every peer whose toolchain is present, into
// cacheDir/NAME-HASH (HASH covers the sources and the compiler's
// version, so a changed source or toolchain builds anew, and an unchanged
// one is reused). Peers whose toolchain is missing are returned as
// skipped, naming the Debian packages to install; a build that fails with
// the toolchain present is an error.
func buildPeers(ctx context.Context, cacheDir string) ([]builtPeer, []PeerSkip, error) {
	var built []builtPeer
	var skipped []PeerSkip
	for _, p := range peerSpecs {
		if pkgs, what := p.missing(); len(pkgs) > 0 {
			skipped = append(skipped, PeerSkip{p.name, fmt.Sprintf("%s not found: apt-get install %s",
				strings.Join(what, ", "), strings.Join(pkgs, " "))})
			continue
		}
		b, err := buildPeer(ctx, p, cacheDir)
		if err != nil {
			return nil, nil, err
		}
		built = append(built, b)
	}
	return built, skipped, nil
}

func buildPeer(ctx context.Context, p peerSpec, cacheDir string) (builtPeer, error) {
	key, err := peerKey(ctx, p)
	if err != nil {
		return builtPeer{}, err
	}
	final := filepath.Join(cacheDir, p.name+"-"+key)
	b := builtPeer{spec: p, bin: filepath.Join(final, "peer")}
	if _, err := os.Stat(b.bin); err == nil {
		v, _ := os.ReadFile(filepath.Join(final, "version"))
		b.version, _, _ = strings.Cut(strings.TrimSpace(string(v)), "\n")
		b.compiler = compilerVersion(ctx, p.compiler) // the key covers its version
		return b, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return builtPeer{}, fmt.Errorf("bench: peer %s: %w", p.name, err)
	}
	work, err := os.MkdirTemp(cacheDir, ".build-"+p.name+"-")
	if err != nil {
		return builtPeer{}, fmt.Errorf("bench: peer %s: %w", p.name, err)
	}
	defer os.RemoveAll(work)
	src, out := filepath.Join(work, "src"), filepath.Join(work, "out")
	if err := copyPeerSources(p.name, src); err != nil {
		return builtPeer{}, err
	}
	if err := os.Mkdir(out, 0o755); err != nil {
		return builtPeer{}, fmt.Errorf("bench: peer %s: %w", p.name, err)
	}
	version, err := p.build(ctx, src, filepath.Join(out, "peer"))
	if err != nil {
		return builtPeer{}, fmt.Errorf("bench: building peer %s: %w", p.name, err)
	}
	if err := os.WriteFile(filepath.Join(out, "version"), []byte(version+"\n"), 0o644); err != nil {
		return builtPeer{}, fmt.Errorf("bench: peer %s: %w", p.name, err)
	}
	// Another run may have built the same key meanwhile: its copy is as good.
	if err := os.Rename(out, final); err != nil {
		if _, statErr := os.Stat(b.bin); statErr != nil {
			return builtPeer{}, fmt.Errorf("bench: peer %s: %w", p.name, err)
		}
	}
	b.version, b.compiler = version, compilerVersion(ctx, p.compiler)
	return b, nil
}

// compilerVersion is "NAME VERSION" of compiler (rustc or g++), or NAME
// alone when it does not say.
func compilerVersion(ctx context.Context, compiler string) string {
	arg := "--version" // rustc 1.63.0 (4b91a6ea7 2022-08-08)
	if compiler == "g++" {
		arg = "-dumpfullversion" // 12.2.0
	}
	out, err := exec.CommandContext(ctx, compiler, arg).Output()
	f := strings.Fields(string(out))
	switch {
	case err != nil || len(f) == 0:
		return compiler
	case compiler == "g++":
		return compiler + " " + f[0]
	case len(f) >= 2:
		return compiler + " " + f[1]
	}
	return compiler
}

// peerCacheFormat names the layout of a cached peer's directory (the
// program "peer" and its library's version in "version"), so that a
// change of the layout builds anew.
const peerCacheFormat = "peer+version 1"

// peerKey hashes what p's binary depends on: its sources, the common
// header, the version of each program its build runs, and the cache's
// layout.
func peerKey(ctx context.Context, p peerSpec) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, peerCacheFormat)
	for _, dir := range []string{"peers/" + p.name, "peers/common"} {
		err := fs.WalkDir(peerSources, dir, func(name string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := peerSources.ReadFile(name)
			fmt.Fprintf(h, "%s %d\n", name, len(b))
			h.Write(b)
			return err
		})
		if err != nil {
			return "", fmt.Errorf("bench: peer %s sources: %w", p.name, err)
		}
	}
	for _, n := range p.needs {
		if n.program != "" {
			v, err := exec.CommandContext(ctx, n.program, "--version").Output()
			if err != nil {
				return "", fmt.Errorf("bench: peer %s: %s --version: %w", p.name, n.program, err)
			}
			h.Write(v)
		} else {
			m, _ := filepath.Glob(n.glob)
			fmt.Fprintln(h, m)
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// copyPeerSources writes the embedded sources of peer name and the common
// header to dir.
func copyPeerSources(name, dir string) error {
	for _, sub := range []string{"peers/" + name, "peers/common"} {
		err := fs.WalkDir(peerSources, sub, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			dst := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, "peers/")))
			if d.IsDir() {
				return os.MkdirAll(dst, 0o755)
			}
			b, err := peerSources.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		})
		if err != nil {
			return fmt.Errorf("bench: copying peer %s sources: %w", name, err)
		}
	}
	return nil
}

// buildRayon builds the Rayon peer with cargo, offline, against Debian's
// vendored crates (a directory source replacing crates.io, in a CARGO_HOME
// of its own), and returns the version of rayon that cargo resolved.
func buildRayon(ctx context.Context, src, bin string) (string, error) {
	dir := filepath.Join(src, "rayon")
	home := filepath.Join(src, "cargo-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return "", err
	}
	config := "[source.crates-io]\nreplace-with = \"debian\"\n\n[source.debian]\ndirectory = \"" +
		debianCargoRegistry + "\"\n\n[net]\noffline = true\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644); err != nil {
		return "", err
	}
	env := []string{"CARGO_HOME=" + home, "CARGO_TARGET_DIR=" + filepath.Join(src, "target")}
	if err := runTool(ctx, dir, env, "cargo", "generate-lockfile", "--offline", "--quiet"); err != nil {
		return "", err
	}
	lock, err := os.ReadFile(filepath.Join(dir, "Cargo.lock"))
	if err != nil {
		return "", err
	}
	version := lockedVersion(lock, "rayon")
	if err := runTool(ctx, dir, append(env, "RAYON_VERSION="+version),
		"cargo", "build", "--release", "--offline", "--quiet"); err != nil {
		return "", err
	}
	return version, os.Rename(filepath.Join(src, "target", "release", "forkjoin-rayon"), bin)
}

// lockedVersion returns the version of package name in a Cargo.lock, or
// "" when it is not there.
func lockedVersion(lock []byte, name string) string {
	sc := bufio.NewScanner(bytes.NewReader(lock))
	found := false
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		switch {
		case l == `name = "`+name+`"`:
			found = true
		case found && strings.HasPrefix(l, "version = "):
			return strings.Trim(strings.TrimPrefix(l, "version = "), `"`)
		case l == "[[package]]":
			found = false
		}
	}
	return ""
}

// runTool runs a build program in dir with env added to the environment;
// its error quotes the end of the program's output.
func runTool(ctx context.Context, dir string, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || len(out) > 0 {
			return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(out, 2000))
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// peerLabel is the table's name of a peer on a workload: the runtime with
// its version, and the API the workload uses.
func peerLabel(b builtPeer, o PeerOutput, workload string) string {
	v := b.version
	if v == "" {
		v = o.Version
	}
	api := b.spec.fork
	if workload == "sum" {
		api = b.spec.sum
	}
	return fmt.Sprintf(b.spec.title, v) + " " + api + " (" + b.compiler + ")"
}
