//go:build !linux

package launch

import "os"

// Run runs c.Args directly: admission and placement need Linux (the
// daemon's pidfds, the launcher's Pdeathsig and pinning), so elsewhere
// the launcher only finds the program, skipping itself in PATH, and execs
// it, which keeps a build that names the launcher working.
func Run(c Config) int {
	prog, argv, stderr, code := c.program()
	if code != 0 {
		return code
	}
	return execDirect(c.Prog, prog, argv, os.Environ(), stderr)
}

func beforeExec() (undo func()) { return func() {} }
