// Package jobserver shares a fixed number of job slots between cooperating
// processes through GNU make's jobserver protocol, so that nested builds
// (make calling numasteal calling make) never run more than N jobs in total.
//
// A jobserver is a pipe (or named FIFO) holding N−1 one-byte tokens. Every
// participant owns one implicit slot for free; to run each further job it
// reads a token and writes the same byte back when the job ends. The pipe is
// advertised to children through MAKEFLAGS:
//
//	MAKEFLAGS=' -j3 --jobserver-auth=3,4'        pipe form (every GNU make)
//	MAKEFLAGS=' -j3 --jobserver-auth=fifo:/tmp/x' FIFO form (make ≥ 4.4)
//	MAKEFLAGS=' -j3 --jobserver-fds=3,4'         pipe form (make < 4.2)
//
// [Server] creates a jobserver and prepares an [exec.Cmd] so that the child
// inherits it; [FromEnv] joins the jobserver a parent exported and returns a
// [Client] whose [Client.Acquire] and [Client.Release] hand out slots. The
// server's own process takes its slots through [Server.Client].
//
// # Protocol notes
//
// A client never changes the file status flags of the inherited read
// descriptor: GNU make itself toggles O_NONBLOCK on that shared open file
// description. The client instead reopens the pipe through /proc/self/fd/R
// (a new description of the same pipe) in non-blocking mode, waits for it
// with poll(2) together with an eventfd used for cancellation, and reads one
// byte at a time. A byte read after the caller's context was cancelled is
// written back, so cancellation never swallows a token.
//
// Tokens held by a child that dies are lost from the pipe. The server counts
// them back: when no child is running, every token not held by the server's
// own client must be in the pipe, so [Server.Reconcile] compares the pipe's
// byte count (FIONREAD) against that number and writes the missing tokens (or
// drains surplus ones). See [Server.Reconcile] for the limits of the method.
package jobserver
