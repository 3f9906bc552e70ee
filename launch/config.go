package launch

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// SlotEnv is set in the environment of a launched command to its job id.
// A launcher that finds it (gcc running a masqueraded ld, a compile that
// runs make) runs its command at once, in the slot it is already in:
// asking for a second slot while holding one could deadlock a full pool.
const SlotEnv = "NUMASTEAL_SLOT"

// MeasureEnv set to 1 asks the daemon to have every command measured
// (run as the launcher's child, its peak RSS reported) instead of handed
// off: to refresh the daemon's store after a change of compiler or flags,
// or to time the measured path.
const MeasureEnv = "NUMASTEAL_MEASURE"

// Config is one launch.
type Config struct {
	// Args is the command: the program (a name looked up in PATH, or a
	// path) and its arguments.
	Args []string
	// Prog names the launcher in messages ("numasteal launch").
	Prog string
	// Serve starts the daemon when none answers; nil means
	// ServeCommand(os.Getenv).
	Serve []string
	// Stderr gets the launcher's own messages; nil means os.Stderr. The
	// command always gets the launcher's descriptors 0, 1 and 2 themselves.
	Stderr io.Writer
}

// stderr fills in c's defaults and returns where the launcher's own
// messages go.
func (c *Config) stderr() io.Writer {
	if c.Prog == "" {
		c.Prog = "numasteal launch"
	}
	if c.Stderr == nil {
		return os.Stderr
	}
	return c.Stderr
}

// program finds the program of c.Args (not empty), skipping this binary
// in PATH: prog is its path and argv the command line to exec. A non-zero
// code is the exit status to return (not found, 127), with the message
// written to stderr.
func (c *Config) program(stderr io.Writer) (prog string, argv []string, code int) {
	prog, err := FindProgram(c.Args[0], os.Getenv("PATH"), SelfStat())
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s: %v\n", c.Prog, c.Args[0], err)
		return "", nil, 127
	}
	return prog, append([]string{prog}, c.Args[1:]...), 0
}

// execDirect replaces the launcher with the command (the fallback: no
// slot, nothing to report, and one process fewer), with the signal
// dispositions and mask the launcher inherited (in).
func execDirect(in inherited, progName, prog string, argv, env []string, stderr io.Writer) int {
	undo := in.beforeExec()
	err := syscall.Exec(prog, argv, env)
	undo()
	fmt.Fprintf(stderr, "%s: %s: %v\n", progName, prog, err)
	return 127
}
