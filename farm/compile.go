package farm

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Compile is a compiler invocation that may go to the farm: one source
// file compiled (-c) into one object (-o). The executor runs it in two
// steps, as distcc's plain mode does: the preprocessor locally
// (PreprocessArgs), then the compile of the preprocessed file on the
// chosen host (RemoteArgs, prefixed by distcc).
type Compile struct {
	// Args is the whole command; Args[0] is the compiler.
	Args []string
	// Source and Output are the source file and the object, as written.
	Source, Output string
	// src and out are their indexes in Args (out is the -o's argument,
	// or the -oFILE word).
	src, out  int
	joinedOut bool // Output came as "-oFILE"
}

// compilerName matches the compilers distcc's hosts run: cc, gcc, clang,
// c++, g++, clang++, with a target prefix (x86_64-linux-gnu-) and a
// version suffix (-12, -16.0).
var compilerName = regexp.MustCompile(`^([A-Za-z0-9_.]+-)*(cc|gcc|clang|c\+\+|g\+\+|clang\+\+)(-[0-9][0-9.]*)?$`)

// sourceExt are the languages distcc distributes, and the suffix of their
// preprocessed form.
var sourceExt = map[string]string{
	".c": ".i", ".i": ".i",
	".cc": ".ii", ".cp": ".ii", ".cpp": ".ii", ".cxx": ".ii", ".c++": ".ii", ".C": ".ii", ".ii": ".ii",
	".m": ".mi", ".mi": ".mi", ".mm": ".mii", ".M": ".mii", ".mii": ".mii",
}

// localOnly are options that make a command unsuitable for the farm: no
// object comes out (-E, -S, -M, -MM), the input is stdin or its language
// is forced (-x: the preprocessed suffix would no longer say it), or the
// compiler writes files beside the object that would stay remote.
var localOnly = map[string]bool{
	"-E": true, "-S": true, "-M": true, "-MM": true, "-x": true, "-": true,
	"-save-temps": true, "-fprofile-arcs": true, "-ftest-coverage": true, "--coverage": true,
	"-flto": true, "-specs": true, "-fsyntax-only": true,
}

// localOnlyPrefix are the same for options written with a value.
var localOnlyPrefix = []string{"-x", "-save-temps=", "-specs=", "-flto=", "-fprofile-generate", "-fprofile-use", "-fauto-profile", "-Wa,-a", "--param=", "-B"}

// withValue are options whose value is the next word (so that word is not
// a source file).
var withValue = map[string]bool{
	"-o": true, "-I": true, "-D": true, "-U": true, "-include": true, "-imacros": true, "-isystem": true,
	"-iquote": true, "-idirafter": true, "-iprefix": true, "-iwithprefix": true, "-iwithprefixbefore": true,
	"-isysroot": true, "-MF": true, "-MT": true, "-MQ": true, "-Xpreprocessor": true, "-Xassembler": true,
	"-Xlinker": true, "-L": true, "-l": true, "-target": true, "--target": true, "-arch": true, "-aux-info": true,
	"--sysroot": true, "-G": true,
}

// ParseCompile recognises a compiler invocation that may run on the farm:
// argv[0] is cc, gcc, clang, c++, g++ or clang++ (any directory, target
// prefix or version suffix), -c is present, exactly one source file of a
// language distcc distributes, and an object named by -o. Anything else
// (links, -E, -S, several sources, stdin, forced languages, profile or
// LTO builds, ccache or distcc wrappers) stays local: ok is false.
func ParseCompile(argv []string) (c Compile, ok bool) {
	if len(argv) < 2 || !compilerName.MatchString(filepath.Base(argv[0])) {
		return Compile{}, false
	}
	return parseCompile(argv)
}

// ParseMarkedCompile is ParseCompile for a command the build graph marked
// as remote (buildgraph.Task.Remote): the compiler may have any name
// (a wrapper the graph vouches for), the rest of the checks hold.
func ParseMarkedCompile(argv []string) (c Compile, ok bool) {
	if len(argv) < 2 {
		return Compile{}, false
	}
	return parseCompile(argv)
}

// parseCompile checks everything but the compiler's name.
func parseCompile(argv []string) (c Compile, ok bool) {
	c = Compile{Args: argv, src: -1, out: -1}
	compile := false
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-c":
			compile = true
		case localOnly[a]:
			return Compile{}, false
		case a == "-o":
			if i+1 >= len(argv) || c.out >= 0 {
				return Compile{}, false
			}
			i++
			c.out, c.Output = i, argv[i]
		case strings.HasPrefix(a, "-o"):
			if c.out >= 0 {
				return Compile{}, false
			}
			c.out, c.Output, c.joinedOut = i, a[2:], true
		case withValue[a]:
			i++
		case strings.HasPrefix(a, "-"):
			for _, p := range localOnlyPrefix {
				if strings.HasPrefix(a, p) {
					return Compile{}, false
				}
			}
		default:
			if _, known := sourceExt[filepath.Ext(a)]; !known || c.src >= 0 {
				return Compile{}, false // an object or library (a link), or a second source
			}
			c.src, c.Source = i, a
		}
	}
	if !compile || c.src < 0 || c.out < 0 || c.Output == "" {
		return Compile{}, false
	}
	return c, true
}

// PreprocessedExt returns the suffix of the source's preprocessed form:
// ".i" for C, ".ii" for C++, ".mi"/".mii" for Objective-C(++).
func (c Compile) PreprocessedExt() string { return sourceExt[filepath.Ext(c.Source)] }

// PreprocessArgs returns the local step: the same command with -c
// replaced by -E and the object by pre (the preprocessed file, named with
// PreprocessedExt). Dependency options (-MD, -MMD) keep writing what the
// whole command would have: when no -MF or -MT/-MQ was given, they are
// added naming the object's .d file and the object, since gcc would
// otherwise derive both from pre.
func (c Compile) PreprocessArgs(pre string) []string {
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
func (c Compile) RemoteArgs(pre string) []string {
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
func (c Compile) setOutput(args []string, out string) {
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
