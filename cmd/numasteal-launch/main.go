// Command numasteal-launch is the compiler launcher of numasteal: the
// small binary that build systems run in front of every compile and link
// (see package launch). It links only what launching needs, so it starts
// in about the time of an empty Go program; "numasteal launch" does the
// same from the full binary, at the cost of its initialization.
//
// Usage:
//
//	numasteal-launch COMMAND [ARGS...]
//	numasteal-launch --version | -h | --help
//	make CC="numasteal-launch gcc"
//	cmake -DCMAKE_C_COMPILER_LAUNCHER=numasteal-launch ...
//	ln -s $(command -v numasteal-launch) ~/masq/gcc; PATH=~/masq:$PATH make
//
// Invoked under any other name (a masquerade link named gcc, cc, ld...),
// it launches the program of that name found next in PATH.
package main

import (
	"fmt"
	"os"

	"github.com/numasteal/numasteal/internal/version"
	"github.com/numasteal/numasteal/launch"
)

func main() {
	args := os.Args[1:]
	if !launch.IsLauncherName(os.Args[0]) {
		args = os.Args // masquerade: the name is the program
	} else if len(args) > 0 {
		// The launcher's own options come first; a masquerade (gcc
		// --version) passes everything on.
		switch args[0] {
		case "launch":
			args = args[1:] // "numasteal-launch launch gcc" reads like numasteal's
		case "--version", "-version":
			fmt.Println(version.Of("numasteal-launch"))
			os.Exit(0)
		case "-h", "-help", "--help":
			fmt.Print(usage)
			os.Exit(0)
		}
	}
	os.Exit(launch.Run(launch.Config{Args: args, Prog: "numasteal-launch"}))
}

const usage = `usage: numasteal-launch COMMAND [ARGS...]
       numasteal-launch --version | -h | --help

Runs COMMAND (a compile or a link) in a slot of the per-user daemon
"numasteal serve", which it starts when none runs: every build on the
machine shares the daemon's CPUs and memory budget. The exit status is
COMMAND's.

  make -j CC="numasteal-launch gcc" CXX="numasteal-launch g++"
  cmake -DCMAKE_C_COMPILER_LAUNCHER=numasteal-launch ...
  CC="numasteal-launch gcc" meson setup build
  CCACHE_PREFIX=numasteal-launch make CC="ccache gcc"

Under another name (a link named gcc, cc or ld to it, first in PATH) it
runs the program of that name found next in PATH.

Environment:
  NUMASTEAL_BIN          the numasteal binary that serves (default: numasteal
                         beside this binary, else in PATH)
  NUMASTEAL_SERVE_FLAGS  flags of the daemon it starts (--mem 6G, --farm FILE)
  NUMASTEAL_SOCKET       the daemon's socket (default:
                         $XDG_RUNTIME_DIR/numasteal/sock, else
                         $TMPDIR/numasteal-UID/sock)
  NUMASTEAL_BUILD        the build's name (default: the outermost make,
                         ninja... above the launcher)
  NUMASTEAL_LAUNCH=off   run COMMAND directly
  NUMASTEAL_MEASURE=1    measure every command's peak memory

"numasteal status" shows the daemon's slots, jobs and builds.
`
