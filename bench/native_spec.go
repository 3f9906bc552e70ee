package bench

import (
	"fmt"
	"strings"
)

// Native corpus kinds, the part of a corpus spelling before the colon.
const (
	// NativeLinux is the kernel built by Kbuild: "linux:tinyconfig".
	NativeLinux = "linux"
	// NativeDebianCMake is a Debian source package's CMake project built
	// by the build.ninja CMake writes: "debian-cmake:libzstd".
	NativeDebianCMake = "debian-cmake"
)

// NativeSpec is a native corpus spelling, parsed: the build is run by the
// project's own build system instead of as recorded commands.
type NativeSpec struct {
	// Kind is NativeLinux or NativeDebianCMake.
	Kind string
	// Arg is the kernel configuration target (tinyconfig) or the source
	// package (libzstd).
	Arg string
}

// String returns the spelling s was parsed from.
func (s NativeSpec) String() string { return s.Kind + ":" + s.Arg }

// IsNativeCorpus reports whether spec names a native corpus kind
// (linux:..., debian-cmake:...), well spelt or not; ParseNativeSpec says
// whether it is.
func IsNativeCorpus(spec string) bool {
	kind, _, _ := strings.Cut(spec, ":")
	return kind == NativeLinux || kind == NativeDebianCMake
}

// ParseNativeSpec parses "linux:tinyconfig" or "debian-cmake:SRCPKG".
func ParseNativeSpec(spec string) (NativeSpec, error) {
	kind, arg, _ := strings.Cut(spec, ":")
	switch kind {
	case NativeLinux:
		if arg != "tinyconfig" {
			return NativeSpec{}, fmt.Errorf("bench: corpus %q: the kernel is built at tinyconfig only (linux:tinyconfig)", spec)
		}
	case NativeDebianCMake:
		if !validDebianName(arg) {
			return NativeSpec{}, fmt.Errorf("bench: corpus %q: name a Debian source package with a CMake project (debian-cmake:libzstd)", spec)
		}
	default:
		return NativeSpec{}, fmt.Errorf("bench: corpus %q is not a native build (want linux:tinyconfig or debian-cmake:SRCPKG)", spec)
	}
	return NativeSpec{Kind: kind, Arg: arg}, nil
}

// validDebianName reports whether s is a Debian package name: lower-case
// letters, digits, '+', '-' and '.', at least two, starting with a letter
// or digit (Debian Policy 5.6.1).
func validDebianName(s string) bool {
	if len(s) < 2 {
		return false
	}
	for i, r := range s {
		alnum := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("+-.", r)) {
			return false
		}
	}
	return true
}
