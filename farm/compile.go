package farm

import "github.com/numasteal/numasteal/farm/compile"

// Compile is a compiler invocation that may go to the farm: one source
// file compiled (-c) into one object (-o). Package farm/compile defines it
// (compile.Command), so that the launcher recognises remote compiles
// without linking the farm's networking.
type Compile = compile.Command

// ParseCompile recognises a compiler invocation that may run on the farm
// (compile.Parse): argv[0] is cc, gcc, clang, c++, g++ or clang++ (any
// directory, target prefix or version suffix), -c is present, exactly one
// source file of a language distcc distributes, and an object named by
// -o. Anything else stays local: ok is false.
func ParseCompile(argv []string) (c Compile, ok bool) { return compile.Parse(argv) }

// ParseMarkedCompile is ParseCompile for a command the build graph marked
// as remote (compile.ParseMarked): the compiler may have any name, the
// rest of the checks hold.
func ParseMarkedCompile(argv []string) (c Compile, ok bool) { return compile.ParseMarked(argv) }
