// Package compile recognises the compiler invocations a compile farm may
// run (package farm): one source file compiled with -c into one object,
// by a compiler distcc's hosts have; and it tells compiles and links
// from other commands (Classify), which a run may run again after the
// kernel's OOM killer ended them. It is a leaf of the standard library
// that does no work at init (its tables are switch statements, not maps
// or regular expressions), so the launcher (package launch), a static
// binary started before every compile, links it at no cost.
package compile

import (
	"path/filepath"
	"slices"
	"strings"
)

// Command is a compiler invocation that may go to the farm: one source
// file compiled (-c) into one object (-o). The executor runs it in two
// steps, as distcc's plain mode does: the preprocessor locally
// (PreprocessArgs), then the compile of the preprocessed file on the
// chosen host (RemoteArgs, prefixed by distcc).
type Command struct {
	// Args is the whole command; Args[0] is the compiler.
	Args []string
	// Source and Output are the source file and the object, as written.
	Source, Output string
	// src and out are their indexes in Args (out is the -o's argument,
	// or the -oFILE word).
	src, out  int
	joinedOut bool // Output came as "-oFILE"
}

// IsCompilerName reports whether name (a base name) is one of the
// compilers distcc's hosts run: cc, gcc, clang, c++, g++, clang++, with a
// target prefix (x86_64-linux-gnu-) and a version suffix (-12, -16.0);
// that is, it matches
//
//	^([A-Za-z0-9_.]+-)*(cc|gcc|clang|c\+\+|g\+\+|clang\+\+)(-[0-9][0-9.]*)?$
func IsCompilerName(name string) bool {
	if compilerWithPrefix(name) {
		return true
	}
	i := strings.LastIndexByte(name, '-')
	return i >= 0 && isVersion(name[i+1:]) && compilerWithPrefix(name[:i])
}

// compilerWithPrefix reports whether s is a compiler's name after any
// number of "PREFIX-" words, without a version suffix.
func compilerWithPrefix(s string) bool {
	words := strings.Split(s, "-")
	switch words[len(words)-1] {
	case "cc", "gcc", "clang", "c++", "g++", "clang++":
	default:
		return false
	}
	for _, w := range words[:len(words)-1] {
		if w == "" {
			return false
		}
		for i := 0; i < len(w); i++ {
			c := w[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.') {
				return false
			}
		}
	}
	return true
}

// isVersion reports whether s is a digit followed by digits and dots.
func isVersion(s string) bool {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && s[i] != '.' {
			return false
		}
	}
	return true
}

// preprocessedExt returns the suffix of the preprocessed form of a source
// with extension ext, and whether ext is a language distcc distributes.
func preprocessedExt(ext string) (string, bool) {
	switch ext {
	case ".c", ".i":
		return ".i", true
	case ".cc", ".cp", ".cpp", ".cxx", ".c++", ".C", ".ii":
		return ".ii", true
	case ".m", ".mi":
		return ".mi", true
	case ".mm", ".M", ".mii":
		return ".mii", true
	}
	return "", false
}

// localOnly reports whether option a makes a command unsuitable for the
// farm: no object comes out (-E, -S, -M, -MM), the input is stdin or its
// language is forced (-x: the preprocessed suffix would no longer say
// it), or the compiler writes files beside the object that would stay
// remote.
func localOnly(a string) bool {
	switch a {
	case "-E", "-S", "-M", "-MM", "-x", "-",
		"-save-temps", "-fprofile-arcs", "-ftest-coverage", "--coverage",
		"-flto", "-specs", "-fsyntax-only":
		return true
	}
	return false
}

// localOnlyPrefix are the same for options written with a value.
var localOnlyPrefix = [...]string{"-x", "-save-temps=", "-specs=", "-flto=", "-fprofile-generate", "-fprofile-use", "-fauto-profile", "-Wa,-a", "--param=", "-B"}

// withValue reports whether a is an option whose value is the next word
// (so that word is not a source file).
func withValue(a string) bool {
	switch a {
	case "-o", "-I", "-D", "-U", "-include", "-imacros", "-isystem",
		"-iquote", "-idirafter", "-iprefix", "-iwithprefix", "-iwithprefixbefore",
		"-isysroot", "-MF", "-MT", "-MQ", "-Xpreprocessor", "-Xassembler",
		"-Xlinker", "-L", "-l", "-target", "--target", "-arch", "-aux-info",
		"--sysroot", "-G":
		return true
	}
	return false
}

// Parse recognises a compiler invocation that may run on the farm:
// argv[0] is cc, gcc, clang, c++, g++ or clang++ (any directory, target
// prefix or version suffix), -c is present, exactly one source file of a
// language distcc distributes, and an object named by -o. Anything else
// (links, -E, -S, several sources, stdin, forced languages, profile or
// LTO builds, ccache or distcc wrappers) stays local: ok is false.
func Parse(argv []string) (c Command, ok bool) {
	if len(argv) < 2 || !IsCompilerName(filepath.Base(argv[0])) {
		return Command{}, false
	}
	return parse(argv)
}

// ParseMarked is Parse for a command the build graph marked as remote
// (buildgraph.Task.Remote): the compiler may have any name (a wrapper the
// graph vouches for), the rest of the checks hold.
func ParseMarked(argv []string) (c Command, ok bool) {
	if len(argv) < 2 {
		return Command{}, false
	}
	return parse(argv)
}

// parse checks everything but the compiler's name.
func parse(argv []string) (c Command, ok bool) {
	c = Command{Args: argv, src: -1, out: -1}
	compile := false
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-c":
			compile = true
		case localOnly(a):
			return Command{}, false
		case a == "-o":
			if i+1 >= len(argv) || c.out >= 0 {
				return Command{}, false
			}
			i++
			c.out, c.Output = i, argv[i]
		case strings.HasPrefix(a, "-o"):
			if c.out >= 0 {
				return Command{}, false
			}
			c.out, c.Output, c.joinedOut = i, a[2:], true
		case withValue(a):
			i++
		case strings.HasPrefix(a, "-"):
			for _, p := range localOnlyPrefix {
				if strings.HasPrefix(a, p) {
					return Command{}, false
				}
			}
		default:
			if _, known := preprocessedExt(filepath.Ext(a)); !known || c.src >= 0 {
				return Command{}, false // an object or library (a link), or a second source
			}
			c.src, c.Source = i, a
		}
	}
	if !compile || c.src < 0 || c.out < 0 || c.Output == "" {
		return Command{}, false
	}
	return c, true
}

// PreprocessedExt returns the suffix of the source's preprocessed form:
// ".i" for C, ".ii" for C++, ".mi"/".mii" for Objective-C(++).
func (c Command) PreprocessedExt() string {
	ext, _ := preprocessedExt(filepath.Ext(c.Source))
	return ext
}

// PreprocessArgs returns the local step: the same command with -c
// replaced by -E and the object by pre (the preprocessed file, named with
// PreprocessedExt). Dependency options (-MD, -MMD) keep writing what the
// whole command would have: when no -MF or -MT/-MQ was given, they are
// added naming the object's .d file and the object, since gcc would
// otherwise derive both from pre.
func (c Command) PreprocessArgs(pre string) []string {
	args := slices.Clone(c.Args)
	for i, a := range args {
		if a == "-c" {
			args[i] = "-E"
		}
	}
	c.setOutput(args, pre)
	if slices.Contains(c.Args, "-MD") || slices.Contains(c.Args, "-MMD") {
		if !hasOption(c.Args, "-MF") {
			args = append(args, "-MF", strings.TrimSuffix(c.Output, filepath.Ext(c.Output))+".d")
		}
		if !hasOption(c.Args, "-MT") && !hasOption(c.Args, "-MQ") {
			args = append(args, "-MT", c.Output)
		}
	}
	return args
}

// RemoteArgs returns the remote step, to run as `distcc RemoteArgs...`:
// the same command compiling pre instead of the source, with the
// dependency options dropped (the local step wrote the .d file already).
// distccd strips the remaining preprocessor options itself.
func (c Command) RemoteArgs(pre string) []string {
	args := make([]string, 0, len(c.Args))
	for i := 0; i < len(c.Args); i++ {
		a := c.Args[i]
		switch {
		case i == c.src:
			args = append(args, pre)
		case a == "-MD" || a == "-MMD" || a == "-MP":
		case a == "-MF" || a == "-MT" || a == "-MQ":
			i++
		case strings.HasPrefix(a, "-MF") || strings.HasPrefix(a, "-MT") || strings.HasPrefix(a, "-MQ"):
		default:
			args = append(args, a)
		}
	}
	return args
}

// setOutput points the -o of args (a clone of c.Args) at out.
func (c Command) setOutput(args []string, out string) {
	if c.joinedOut {
		args[c.out] = "-o" + out
	} else {
		args[c.out] = out
	}
}

// hasOption reports whether args hold opt, alone or with its value joined.
func hasOption(args []string, opt string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, opt) {
			return true
		}
	}
	return false
}

// Kind is what a command is, as far as its memory and its rerun go.
type Kind uint8

// The kinds of command.
const (
	// Other is any command but a compiler's or a linker's.
	Other Kind = iota
	// Compile is a compiler with -c, -S or -E: one translation unit.
	Compile
	// Link is a compiler driver without them, or a linker itself.
	Link
)

// String returns "other", "compile" or "link".
func (k Kind) String() string {
	switch k {
	case Compile:
		return "compile"
	case Link:
		return "link"
	}
	return "other"
}

// Classify returns the kind of argv: Compile or Link when argv[0] is a
// compiler (IsCompilerName) or a linker (ld, ld.bfd, ld.gold, lld,
// ld.lld, mold, gold, TARGET-ld), else Other. Both rewrite their output
// whole, so running one again after it was killed is safe.
func Classify(argv []string) Kind {
	if len(argv) == 0 {
		return Other
	}
	base := filepath.Base(argv[0])
	if IsLinkerName(base) {
		return Link
	}
	if !IsCompilerName(base) {
		return Other
	}
	if slices.ContainsFunc(argv[1:], func(a string) bool { return a == "-c" || a == "-S" || a == "-E" }) {
		return Compile
	}
	return Link
}

// IsLinkerName reports whether name (a base name) is a linker's: ld,
// ld.gold, ld.lld, x86_64-linux-gnu-ld, lld, mold, gold.
func IsLinkerName(name string) bool {
	switch name {
	case "ld", "lld", "mold", "gold":
		return true
	}
	return strings.HasPrefix(name, "ld.") || strings.HasSuffix(name, "-ld")
}
