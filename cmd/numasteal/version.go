package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// runVersion implements "numasteal version" and "numasteal --version": the
// module version and the VCS revision the binary was built from, as
// runtime/debug.ReadBuildInfo reports them.
func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal version", stderr)
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(stdout, "numasteal (no build information)")
		return exitOK
	}
	fmt.Fprintln(stdout, versionLine(bi))
	return exitOK
}

// versionLine is "numasteal v1.2.3 (rev 0123abcd…, modified, go1.26.8)":
// the main module's version ("(devel)" for a build in a checkout) and the
// vcs.revision, vcs.modified and Go version of the build settings.
func versionLine(bi *debug.BuildInfo) string {
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	rev, modified := "unknown", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	extra := ""
	if modified {
		extra = ", modified"
	}
	return fmt.Sprintf("numasteal %s (rev %s%s, %s)", version, rev, extra, bi.GoVersion)
}
