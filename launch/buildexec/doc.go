// Package buildexec starts a build tool as the root of a build that the
// numasteal daemon serves a jobserver whose tokens are the daemon's
// slots ("numasteal exec make ..."). The tool — GNU make, or any
// jobserver client: ninja ≥ 1.13, cargo, gcc -flto=jobserver — then
// takes a slot before it forks a job, so a build forks only the jobs the
// daemon can run now: no launcher waits for a grant by the hundred.
//
// The process asks the daemon for the jobserver (a pipe the daemon
// lends tokens into, received over the daemon's socket), names it in
// MAKEFLAGS as " -jN --jobserver-auth=R,W" (N: the daemon's slots), and
// execs the command in its own place, so the tool's pid is the one the
// daemon watches: the build ends when it exits, and the tokens it lent
// go back to the pool ($NUMASTEAL_BUILD, which would name another build,
// is removed from its environment). For make, a -j option on the command line would
// make it ignore the jobserver ("-jN forced in submake"), so Exec drops
// a standalone -j, -jN, --jobs and --jobs=N (and the N of "-j N") from a
// make's arguments; the daemon decides how many jobs run.
package buildexec
