package launch

// ClientFromEnv returns the Client of a process with environment getenv
// that starts the daemon with serve (ServeCommand): the paths of
// $XDG_RUNTIME_DIR or $TMPDIR, and the flags of $NUMASTEAL_SERVE_FLAGS.
func ClientFromEnv(getenv func(string) string, serve []string) *Client {
	return &Client{Paths: PathsFromEnv(getenv), Serve: serve, ServeFlags: serveFlags(getenv)}
}
