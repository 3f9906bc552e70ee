package launch

import (
	"path/filepath"
	"strings"

	"github.com/numasteal/numasteal/farm/compile"
)

// Kind is what a job is, for its first memory guess.
type Kind string

// The kinds of job.
const (
	Compile Kind = "compile" // -c, -S, -E: one translation unit
	Link    Kind = "link"    // a driver without -c, or a linker itself
)

// Classify returns the kind of the command prog args and the output file
// it writes: -o FILE or -oFILE; for a compile without -o, the first source
// file's base name with .o. out is "" when it cannot tell.
func Classify(prog string, args []string) (k Kind, out string) {
	k = Link
	base := filepath.Base(prog)
	linker := compile.IsLinkerName(base)
	src := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c" || a == "-S" || a == "-E":
			if !linker {
				k = Compile
			}
		case a == "-o" && i+1 < len(args):
			out = args[i+1]
			i++
		case strings.HasPrefix(a, "-o") && len(a) > 2:
			out = a[2:]
		case src == "" && !strings.HasPrefix(a, "-") && isSource(a):
			src = a
		}
	}
	if out == "" && k == Compile && src != "" {
		b := filepath.Base(src)
		out = strings.TrimSuffix(b, filepath.Ext(b)) + ".o"
	}
	return k, out
}

func isSource(a string) bool {
	switch filepath.Ext(a) {
	case ".c", ".cc", ".cpp", ".cxx", ".C", ".c++", ".m", ".mm", ".s", ".S", ".f", ".f90", ".rs", ".go":
		return true
	}
	return false
}
