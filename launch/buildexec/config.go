package buildexec

// Config configures Exec.
type Config struct {
	// Args is the command and its arguments.
	Args []string
	// Serve is the command line that starts the daemon when none runs
	// (launch.ServeCommand); nil: only a running daemon is used.
	Serve []string
	// Getenv and Environ read the environment; nil: the process's.
	Getenv  func(string) string
	Environ func() []string
}
