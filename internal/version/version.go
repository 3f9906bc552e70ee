// Package version is the version line of numasteal's commands, from the
// build information the Go toolchain records in every binary.
package version

import (
	"fmt"
	"runtime/debug"
)

// Of returns the version line of the running binary, named name.
func Of(name string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return name + " (no build information)"
	}
	return Line(name, bi)
}

// Line is "NAME v1.2.3 (rev 0123abcd…, modified, go1.26.8)": the main
// module's version ("(devel)" for a build in a checkout) and the
// vcs.revision, vcs.modified and Go version of the build settings.
func Line(name string, bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
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
	return fmt.Sprintf("%s %s (rev %s%s, %s)", name, v, rev, extra, bi.GoVersion)
}
