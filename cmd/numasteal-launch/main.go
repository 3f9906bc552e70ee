// Command numasteal-launch is the compiler launcher of numasteal: the
// small binary that build systems run in front of every compile and link
// (see package launch). It links only what launching needs, so it starts
// in about the time of an empty Go program; "numasteal launch" does the
// same from the full binary, at the cost of its initialization.
//
// Usage:
//
//	numasteal-launch COMMAND [ARGS...]
//	make CC="numasteal-launch gcc"
//	cmake -DCMAKE_C_COMPILER_LAUNCHER=numasteal-launch ...
//	ln -s $(command -v numasteal-launch) ~/masq/gcc; PATH=~/masq:$PATH make
//
// Invoked under any other name (a masquerade link named gcc, cc, ld...),
// it launches the program of that name found next in PATH.
package main

import (
	"os"

	"github.com/numasteal/numasteal/launch"
)

func main() {
	args := os.Args[1:]
	if !launch.IsLauncherName(os.Args[0]) {
		args = os.Args // masquerade: the name is the program
	} else if len(args) > 0 && args[0] == "launch" {
		args = args[1:] // "numasteal-launch launch gcc" reads like numasteal's
	}
	os.Exit(launch.Run(launch.Config{Args: args, Prog: "numasteal-launch"}))
}
