//go:build !linux

package launch

import (
	"fmt"
	"os"
)

// Run runs c.Args directly: admission and placement need Linux (the
// daemon's pidfds, the launcher's Pdeathsig and pinning), so elsewhere
// the launcher only finds the program, skipping itself in PATH, and execs
// it, which keeps a build that names the launcher working.
func Run(c Config) int {
	stderr := c.stderr()
	if len(c.Args) == 0 {
		fmt.Fprintf(stderr, "usage: %s COMMAND [ARGS...]\n", c.Prog)
		return 2
	}
	prog, argv, code := c.program(stderr)
	if code != 0 {
		return code
	}
	return execDirect(inherited{}, c.Prog, prog, argv, os.Environ(), stderr)
}

// inherited is empty off Linux: the command gets what exec gives it.
type inherited struct{}

func (inherited) beforeExec() (undo func()) { return func() {} }
