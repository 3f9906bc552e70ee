package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/numasteal/numasteal/internal/version"
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

// versionLine is "numasteal v1.2.3 (rev 0123abcd…, modified, go1.26.8)"
// (package internal/version, which numasteal-launch shares).
func versionLine(bi *debug.BuildInfo) string { return version.Line("numasteal", bi) }
