package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/numasteal/numasteal/farm/compile"
)

// farmCompile reports whether argv (the program's path, then its
// arguments), a command whose first word was arg0, may run on a farm
// host, and returns the compiler to name to distcc. It may when it is a
// compile distcc's hosts can take (compile.Parse) and the compiler can be
// named so that both ends find it:
//
//   - a program found in PATH by its name is named so (distcc looks the
//     name up in PATH again, where a masquerade link to this launcher
//     runs the program in the slot already held; distccd runs its own
//     compiler of that name, as "distcc gcc" does);
//   - a program given by its path in /usr/bin or /bin by that path
//     (distccd takes it as its base name);
//   - any other path stays local: distccd refuses a compiler named by an
//     absolute path.
//
// The distcc client is looked up only when a host is granted (findDistcc):
// every compile is asked about, few go remote.
func farmCompile(arg0 string, argv []string) (compiler string, ok bool) {
	if _, ok := compile.Parse(argv); !ok {
		return "", false
	}
	prog := argv[0]
	switch {
	case !strings.Contains(arg0, "/") || isSelf(arg0, SelfStat()):
		return filepath.Base(arg0), true
	case filepath.Dir(prog) == "/usr/bin" || filepath.Dir(prog) == "/bin":
		return prog, true
	}
	return "", false
}

// findDistcc returns the distcc client in PATH, unless it is the program
// prog itself (a distcc masquerade directory).
func findDistcc(prog string) (string, bool) {
	distcc, err := exec.LookPath("distcc")
	if err != nil {
		return "", false
	}
	if d, err := os.Stat(distcc); err != nil {
		return "", false
	} else if p, err := os.Stat(prog); err != nil || os.SameFile(d, p) {
		return "", false
	}
	return distcc, true
}
