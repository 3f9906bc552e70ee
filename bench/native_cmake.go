package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// The CMake corpus, debian-cmake:SRCPKG: a Debian source package's CMake
// project (at the top of the source, or in build/cmake as zstd has it),
// configured by cmake -G Ninja and built by ninja, its CMakeLists
// unchanged. The source is fetched with apt-get source (the deb-src
// setup of the debian: corpus) and unpacked once into the work
// directory. Each contender has a build directory of its own, configured
// at every benchmark (cmake reuses its cache, so this is quick): the
// launcher's with CMAKE_C_COMPILER_LAUNCHER and
// CMAKE_CXX_COMPILER_LAUNCHER. The package's build dependencies are not
// installed: a project that needs more than a compiler to configure
// fails at cmake, with its message.

// cmakeProjectDirs returns where a source tree's CMake project is
// looked for, in order.
func cmakeProjectDirs() []string { return []string{".", "build/cmake"} }

// prepareDebianCMake fetches and configures pkg's CMake project under
// o.Dir and returns the ninja rows.
func prepareDebianCMake(ctx context.Context, pkg string, o NativeOptions, sess *daemonSession) (*nativePlan, error) {
	work := filepath.Join(o.Dir, "debian-cmake-"+pkg)
	src, err := fetchDebianTree(ctx, pkg, work, o.Log)
	if err != nil {
		return nil, err
	}
	project := ""
	for _, d := range cmakeProjectDirs() {
		if _, err := os.Stat(filepath.Join(src, d, "CMakeLists.txt")); err == nil {
			project = filepath.Join(src, d)
			break
		}
	}
	if project == "" {
		return nil, fmt.Errorf("bench: debian-cmake corpus %s: no CMakeLists.txt in %s (looked in %v)", pkg, src, cmakeProjectDirs())
	}
	dir := func(name string) string { return filepath.Join(work, "build-"+name) }
	s := ninjaSetup{plain: dir("plain"), launch: dir("launch")}
	if o.Two {
		s.plainB, s.launchB = dir("plain-b"), dir("launch-b")
	}
	for _, d := range cmakeBuildDirs(s, o.Launcher) {
		c := cmakeConfigureCmd(project, d.dir, d.launcher)
		start := time.Now()
		o.Log("configure: " + c.String())
		run := func(env []string) error { return c.run(ctx, env) }
		if d.launcher != "" {
			err = sess.withDaemon(run)
		} else {
			err = run(nil)
		}
		if err != nil {
			return nil, fmt.Errorf("bench: debian-cmake corpus %s: configuring: %w", pkg, ctxCause(ctx, err))
		}
		o.Log(fmt.Sprintf("configure: done in %.1fs", time.Since(start).Seconds()))
	}
	cs, rs := ninjaContenders(s)
	return &nativePlan{name: NativeDebianCMake + ":" + pkg, contenders: cs, ratios: rs}, nil
}

// cmakeBuildDir is a build directory and the launcher it is configured
// with ("" for none).
type cmakeBuildDir struct{ dir, launcher string }

// cmakeBuildDirs returns the build directories of s with their
// launchers.
func cmakeBuildDirs(s ninjaSetup, launcher string) []cmakeBuildDir {
	ds := []cmakeBuildDir{{s.plain, ""}, {s.launch, launcher}}
	if s.plainB != "" && s.launchB != "" {
		ds = append(ds, cmakeBuildDir{s.plainB, ""}, cmakeBuildDir{s.launchB, launcher})
	}
	return ds
}

// cmakeConfigureCmd returns the command that configures project in
// build for Ninja, Release, with launcher in front of the C and C++
// compilers when set.
func cmakeConfigureCmd(project, build, launcher string) nativeCmd {
	args := []string{"cmake", "-G", "Ninja", "-S", project, "-B", build, "-DCMAKE_BUILD_TYPE=Release"}
	if launcher != "" {
		args = append(args, "-DCMAKE_C_COMPILER_LAUNCHER="+launcher, "-DCMAKE_CXX_COMPILER_LAUNCHER="+launcher)
	}
	return nativeCmd{Args: args}
}

// fetchDebianTree returns pkg's unpacked source under work, fetching and
// unpacking it first unless an earlier benchmark did. It is unpacked
// beside the tree, removed on every path, and renamed into place once
// whole.
func fetchDebianTree(ctx context.Context, pkg, work string, log func(string)) (string, error) {
	src := filepath.Join(work, "src")
	if _, err := os.Stat(src); err == nil {
		log("reusing the unpacked source " + src)
		return src, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("bench: debian-cmake corpus: %w", err)
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", fmt.Errorf("bench: debian-cmake corpus: %w", err)
	}
	step := debianStepper(ctx, pkg, log)
	dsc, err := fetchDebianDsc(ctx, step, pkg, pkg+"/"+debianSuite, work, log)
	if err != nil {
		return "", err
	}
	partial := src + ".partial"
	if err := os.RemoveAll(partial); err != nil {
		return "", fmt.Errorf("bench: debian-cmake corpus: %w", err)
	}
	defer os.RemoveAll(partial)
	if _, err := step("unpack", work, nil, "dpkg-source", "-x", dsc, partial); err != nil {
		return "", err
	}
	if err := os.Rename(partial, src); err != nil {
		return "", fmt.Errorf("bench: debian-cmake corpus: %w", err)
	}
	return src, nil
}
